package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func init() {
	register(BuildRunArgs{
		Target: "x86_64-linux", GroupID: 7, JobID: 42, JobName: "core/hello", Attempt: 2,
		Command: []string{"make", "hello"}, Env: map[string]string{"CC": "gcc"}, TimeoutMS: 60000,
	})
}

func TestBuildQueueIsPerTarget(t *testing.T) {
	t.Parallel()

	require.Equal(t, "build_x86_64-linux", BuildQueue("x86_64-linux"))
	require.Equal(t, "build_aarch64-darwin", BuildRunArgs{Target: "aarch64-darwin"}.InsertOpts().Queue)
}

func TestBuildOrderIsGroupThenRank(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	require.True(t, BuildOrder(1, BuildOrderJobsPerGroup-1).Before(BuildOrder(2, 0)))
	require.True(t, BuildOrder(2, 0).Before(BuildOrder(2, 1)))
	require.True(t, BuildOrder(BuildOrderMaxGroup(now), BuildOrderJobsPerGroup-1).Before(now))
	require.False(t, BuildOrder(BuildOrderMaxGroup(now)+1, BuildOrderJobsPerGroup-1).Before(now))
	require.Greater(t, BuildOrderMaxGroup(now), int64(1_000_000_000))
}
