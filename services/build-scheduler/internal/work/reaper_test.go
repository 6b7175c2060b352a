package work

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// The reaper settles the builds whose River job is no longer there to run them: a River job
// deleted or cancelled in River UI before it ran cancels its build with the build's unstarted
// dependents, as River UI's Cancel of a running build does; one that ended without a report gives
// the build a new attempt, whose River job names it; a job left pending by the upgrade gets its
// River job. A build whose River job waits or runs is left alone, and a second pass changes
// nothing.
func TestReaperAdoptsOrphans(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name, button string
		press        func(ctx context.Context, b *testBundle, id int64) error
	}{
		{"DeletedBeforeItRan", "Delete", func(ctx context.Context, b *testBundle, id int64) error {
			_, err := b.client.JobDelete(ctx, id)
			return err
		}},
		{"CancelledBeforeItRan", "Cancel", func(ctx context.Context, b *testBundle, id int64) error {
			_, err := b.client.JobCancel(ctx, id)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, ctx := setup(t)
			require.NoError(t, tt.press(ctx, b, riverJobOf(ctx, t, b, "a", 1)))
			b.reap(ctx, t)
			g := b.group(ctx, t)
			require.Equal(t, map[jobgraph.JobState]int{jobgraph.CancelComplete: 2}, g.Counts, "a and its dependent b")
			require.Equal(t, jobgraph.GroupCanceled, g.State)
			events := b.events(ctx, t, b.groupID)
			require.Contains(t, events[0].Message, "before it ran (River UI's "+tt.button+" on a waiting build)")
			b.reap(ctx, t)
			require.Len(t, b.events(ctx, t, b.groupID), len(events), "a second pass changes nothing")
		})
	}

	t.Run("EndedWithoutAReport", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		job := fetchFrom[queue.BuildRunArgs](ctx, t, b, queue.BuildQueue("linux"))
		require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			return queue.JobFailTx(ctx, tx, job, errors.New("its worker gave up"))
		}))
		b.reap(ctx, t)
		require.Equal(t, map[jobgraph.JobState]int{jobgraph.Ready: 1, jobgraph.Waiting: 1}, b.group(ctx, t).Counts)
		again := b.job(ctx, t, riverJobOf(ctx, t, b, "a", 2))
		require.Equal(t, rivertype.JobStateAvailable, again.State, "attempt 2 has a River job of its own")
		a, err := jobgraph.GetJob(ctx, b.pool, job.Args.JobID)
		require.NoError(t, err)
		require.Equal(t, 2, a.Attempt)
		require.Contains(t, b.events(ctx, t, b.groupID)[0].Message, "attempt 2 replaces it as River job")
		b.reap(ctx, t)
		require.Equal(t, 2, b.builds(ctx, t), "a second pass changes nothing")
	})

	t.Run("PendingFromAnEarlierRelease", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		// What the upgrade's migration leaves of a job that was ready: pending, never attempted.
		// (Its River job of the earlier release, which a worker of this one ends cancelled, stays
		// here as the group's first.)
		_, err := b.pool.Exec(ctx, `UPDATE job_graph SET state = 'pending', attempt = 0 WHERE name = 'a'`)
		require.NoError(t, err)
		b.reap(ctx, t)
		require.Equal(t, map[jobgraph.JobState]int{jobgraph.Ready: 1, jobgraph.Waiting: 1}, b.group(ctx, t).Counts)
		require.Equal(t, 2, b.builds(ctx, t), "the job got a River job of its own")
		a, err := jobgraph.GetJob(ctx, b.pool, b.jobID(ctx, t, "a"))
		require.NoError(t, err)
		require.Equal(t, 1, a.Attempt)
	})

	t.Run("WaitingOrRunningBuildsAreLeftAlone", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		b.reap(ctx, t)
		fetchFrom[queue.BuildRunArgs](ctx, t, b, queue.BuildQueue("linux"))
		b.reap(ctx, t)
		require.Equal(t, map[jobgraph.JobState]int{jobgraph.Ready: 1, jobgraph.Waiting: 1}, b.group(ctx, t).Counts)
		require.Equal(t, 1, b.builds(ctx, t))
		require.Empty(t, b.events(ctx, t, b.groupID))
	})
}

// reap runs one reaper pass.
func (b *testBundle) reap(ctx context.Context, t *testing.T) {
	t.Helper()
	r := &Reaper{Pool: b.pool, Graph: b.graph, Logger: b.logger}
	require.NoError(t, r.Reap(ctx))
}

// group reads the bundle's group.
func (b *testBundle) group(ctx context.Context, t *testing.T) jobgraph.Group {
	t.Helper()
	g, err := jobgraph.GetGroup(ctx, b.pool, b.groupID)
	require.NoError(t, err)
	return g
}

// builds counts the build_run River jobs.
func (b *testBundle) builds(ctx context.Context, t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'build_run'`).Scan(&n))
	return n
}

// riverJobOf is the id of the River job of job name's attempt.
func riverJobOf(ctx context.Context, t *testing.T, b *testBundle, name string, attempt int) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM river_job WHERE kind = 'build_run' AND args->>'job_name' = $1
		AND (args->>'attempt')::int = $2`, name, attempt).Scan(&id))
	return id
}

// jobID is the id of the group's job name.
func (b *testBundle) jobID(ctx context.Context, t *testing.T, name string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM job_graph WHERE group_id = $1 AND name = $2`, b.groupID, name).Scan(&id))
	return id
}
