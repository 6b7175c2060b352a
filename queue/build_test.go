package queue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func init() {
	register(
		BuildRunArgs{Target: "x86_64-linux", GroupID: 7, JobID: 42, JobName: "core/hello"},
		BuildReportArgs{
			JobID: 42, Attempt: 2, LeaseToken: 913, Outcome: BuildSucceeded,
			AsBuilt: "core/hello/1.0/20260301", ExitCode: 0, Error: "", LogIncomplete: true,
		},
	)
}

func TestBuildQueueIsPerTarget(t *testing.T) {
	t.Parallel()

	require.Equal(t, "build_x86_64-linux", BuildQueue("x86_64-linux"))
	require.Equal(t, "build_aarch64-darwin", BuildRunArgs{Target: "aarch64-darwin"}.InsertOpts().Queue)
}
