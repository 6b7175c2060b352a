package jobgraph

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/problem"
	"drover.dev/shared/testdb"
)

func TestCancelInEveryState(t *testing.T) {
	t.Parallel()

	t.Run("QueuedGroupCancelsAtOnce", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		state, err := b.graph.CancelTx(ctx, b.tx, g, "test")
		require.NoError(t, err)
		require.Equal(t, GroupCanceled, state)
		require.Equal(t, map[JobState]int{CancelComplete: 2}, b.group(t, g).Counts)
		_, ok := next(t, b.tx, "linux", nil)
		require.False(t, ok, "a cancelled group's ready job is never handed out: its River job is cancelled")
	})

	t.Run("RunningJobIsToldToStop", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("done", "linux"), spec("run", "linux"), spec("ready", "linux"), spec("wait", "linux", "run"))
		b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
		running := b.take(t, "linux")
		var started Started
		started.Add(running, "w1", time.Now())
		require.NoError(t, started.Mark(ctx, b.tx))
		state, err := b.graph.CancelTx(ctx, b.tx, g, "test")
		require.NoError(t, err)
		require.Equal(t, GroupDispatching, state, "the group waits for its running job")
		require.Equal(t, map[JobState]int{Complete: 1, CancelPending: 1, CancelComplete: 2}, b.group(t, g).Counts)
		var live int
		require.NoError(t, b.tx.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'build_run' AND state = 'available'`).Scan(&live))
		require.Zero(t, live, "River cancelled the group's River jobs")

		require.Equal(t, GroupCanceled, b.report(t, running, queue.BuildCancelled).GroupState)
		require.Equal(t, map[JobState]int{Complete: 1, CancelComplete: 3}, b.group(t, g).Counts)
	})

	t.Run("DeadWorkerOfCancellingJob", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"))
		c := b.take(t, "linux")
		var started Started
		started.Add(c, "w1", time.Now())
		require.NoError(t, started.Mark(ctx, b.tx))
		_, err := b.graph.CancelTx(ctx, b.tx, g, "test")
		require.NoError(t, err)
		res, err := b.graph.ReplaceTx(ctx, b.tx, c.JobID, c.Attempt, "test: its worker died")
		require.NoError(t, err)
		require.Equal(t, CancelComplete, res.State, "no new attempt for a build being cancelled")
		require.Equal(t, GroupCanceled, res.GroupState)
	})

	t.Run("FinishedGroups", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"))
		b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
		_, err := b.graph.CancelTx(ctx, b.tx, g, "test")
		require.ErrorIs(t, err, problem.ErrConflict)

		g2 := b.submit(t, spec("a", "linux"))
		_, err = b.graph.CancelTx(ctx, b.tx, g2, "test")
		require.NoError(t, err)
		state, err := b.graph.CancelTx(ctx, b.tx, g2, "again")
		require.NoError(t, err, "cancelling twice is a no-op")
		require.Equal(t, GroupCanceled, state)
		_, err = b.graph.CancelTx(ctx, b.tx, 1<<60, "test")
		require.ErrorIs(t, err, problem.ErrNotFound)
	})
}

// TestCancelRacingTheLastReport cancels a group whose last running job is being reported in
// another transaction: the cancel waits for that job's lock, finds the group settled, and fails
// with a conflict, so its transaction writes nothing.
func TestCancelRacingTheLastReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t, "build_scheduler")
	graph := testGraph(t)
	g := submitCommitted(t, pool, graph, dag.Submission{Name: "race", Jobs: []dag.JobSpec{spec("a", "linux")}}, 3)
	c, ok := next(t, pool, "linux", nil)
	require.True(t, ok)

	report, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = report.Rollback(ctx) }()
	res, err := graph.ReportTx(ctx, report, reportOf(c.Build, queue.BuildFailed))
	require.NoError(t, err)
	require.Equal(t, GroupFailed, res.GroupState)

	cancelled := make(chan error, 1)
	go func() {
		cancelled <- inTx(ctx, pool, func(tx pgx.Tx) error { _, err := graph.CancelTx(ctx, tx, g, "test"); return err })
	}()
	require.Eventually(t, func() bool { // the cancel waits for the reported job's row lock
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, report.Commit(ctx))

	require.ErrorIs(t, <-cancelled, problem.ErrConflict)
	var state GroupState
	var events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT state::text, (SELECT count(*) FROM system_events
		WHERE group_id = $1 AND kind = $2) FROM groups WHERE id = $1`, g, EventCanceled).Scan(&state, &events))
	require.Equal(t, GroupFailed, state)
	require.Zero(t, events, "the failed cancel left no event behind")
}

func TestRetryRerunsOnlyWhatFailed(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	g := b.submit(t, spec("top", "linux"), spec("left", "linux", "top"), spec("right", "linux", "top"),
		spec("bottom", "linux", "left", "right"))
	b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
	b.report(t, b.take(t, "linux"), queue.BuildFailed)
	b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
	require.Equal(t, GroupFailed, b.group(t, g).State)

	_, err := b.graph.RetryTx(ctx, b.tx, g)
	require.NoError(t, err)
	require.Equal(t, map[JobState]int{Complete: 2, Ready: 1, Waiting: 1}, b.group(t, g).Counts)
	left := b.take(t, "linux")
	require.Equal(t, "left", left.Name)
	b.report(t, left, queue.BuildSucceeded)
	require.Equal(t, GroupComplete, b.report(t, b.take(t, "linux"), queue.BuildSucceeded).GroupState)

	_, err = b.graph.RetryTx(ctx, b.tx, g)
	require.ErrorIs(t, err, problem.ErrConflict, "a complete group has nothing to retry")
}
