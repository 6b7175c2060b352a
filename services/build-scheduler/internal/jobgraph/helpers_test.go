package jobgraph

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/testdb"
)

type testBundle struct {
	tx    pgx.Tx
	graph *Graph
}

func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	tokens, err := queue.NewInserter(nil, queue.BuildScheduler)
	require.NoError(t, err)
	return &testBundle{tx: testdb.Tx(t, "build_scheduler"), graph: &Graph{Tokens: tokens}}, context.Background()
}

func spec(name, target string, deps ...string) dag.JobSpec {
	return dag.JobSpec{Name: name, Target: target, Command: []string{"true"}, DependsOn: deps}
}

func (b *testBundle) submit(t *testing.T, jobs ...dag.JobSpec) int64 {
	t.Helper()
	plan, err := dag.Validate(dag.Submission{Name: "g", Jobs: jobs}, dag.DefaultLimits)
	require.NoError(t, err)
	id, err := b.graph.SubmitTx(context.Background(), b.tx, plan, 2)
	require.NoError(t, err)
	return id
}

// take claims the next job of target and requires there is one.
func (b *testBundle) take(t *testing.T, target string) Claim {
	t.Helper()
	c, ok, err := ClaimNext(context.Background(), b.tx, target, "w1", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "no ready job for %s", target)
	return c
}

func (b *testBundle) report(t *testing.T, c Claim, outcome queue.BuildOutcome) Result {
	t.Helper()
	res, err := b.graph.ReportTx(context.Background(), b.tx, queue.BuildReportArgs{
		JobID: c.JobID, Attempt: c.Attempt, LeaseToken: c.LeaseToken, Outcome: outcome, AsBuilt: c.Name + "/1.0",
	})
	require.NoError(t, err)
	return res
}

func (b *testBundle) group(t *testing.T, id int64) Group {
	t.Helper()
	g, err := GetGroup(context.Background(), b.tx, id)
	require.NoError(t, err)
	return g
}

func (b *testBundle) state(t *testing.T, groupID int64, name string) JobState {
	t.Helper()
	var s JobState
	require.NoError(t, b.tx.QueryRow(context.Background(),
		`SELECT state::text FROM job_graph WHERE group_id = $1 AND name = $2`, groupID, name).Scan(&s))
	return s
}

// tokens counts the dispatch tokens in a target's queue.
func (b *testBundle) tokens(t *testing.T, target string) int {
	t.Helper()
	var n int
	require.NoError(t, b.tx.QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE kind = 'build_run' AND queue = $1`, queue.BuildQueue(target)).Scan(&n))
	return n
}
