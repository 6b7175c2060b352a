package jobgraph

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/dag"
)

// TestLargeGroupRefreshesStatistics: a group of analyzeFrom jobs leaves job_graph's statistics
// knowing its rows before anything of it runs, so its first reports are planned for its size.
// Its target is new, so only an ANALYZE in the submitting transaction can have seen it.
func TestLargeGroupRefreshesStatistics(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	target := fmt.Sprintf("stats%d", rand.Uint32())
	jobs := make([]dag.JobSpec, analyzeFrom)
	for i := range jobs {
		jobs[i] = spec(fmt.Sprint("j", i), target)
	}
	b.submit(t, jobs...)
	var seen bool
	require.NoError(t, b.tx.QueryRow(ctx, `SELECT $1 = ANY (most_common_vals::text::text[]) FROM pg_stats
		WHERE schemaname = 'build_scheduler' AND tablename = 'job_graph' AND attname = 'target'`, target).Scan(&seen))
	require.True(t, seen, "job_graph's statistics do not know the group's target")
}
