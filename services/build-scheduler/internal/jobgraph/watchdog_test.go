package jobgraph

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
)

func TestWatchdog(t *testing.T) {
	t.Parallel()

	t.Run("CancelsStalledGroup", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
		// Lose b's readiness, as a lost message would: it waits with nothing ready or running.
		_, err := b.tx.Exec(ctx, `UPDATE job_graph SET state = 'waiting_on_dependency', waiting_on_count = 1 WHERE group_id = $1 AND name = 'b'`, g)
		require.NoError(t, err)

		rep, err := b.graph.WatchTx(ctx, b.tx, 0)
		require.NoError(t, err)
		require.Equal(t, []int64{g}, rep.Canceled)
		require.Len(t, rep.Drift[g], 1)
		events, err := Events(ctx, b.tx, g, 10)
		require.NoError(t, err)
		var msgs []string
		for _, e := range events {
			msgs = append(msgs, e.Message)
		}
		require.Contains(t, msgs[len(msgs)-1], "1 counters disagree")
		require.Contains(t, msgs[0], "stalled: 1 jobs waiting on dependencies, none ready or running")
		require.Equal(t, GroupCanceled, b.group(t, g).State)
	})

	t.Run("CancelsGroupForTargetWithoutWorkers", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "riscv64-nobody"))
		rep, err := b.graph.WatchTx(ctx, b.tx, 0)
		require.NoError(t, err)
		require.Equal(t, []int64{g}, rep.Canceled)
		events, err := Events(ctx, b.tx, g, 1)
		require.NoError(t, err)
		require.Contains(t, events[0].Message, "no worker has polled target riscv64-nobody")
	})

	t.Run("LeavesSlowHealthyGroupsAlone", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		running := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		b.take(t, "linux")
		require.NoError(t, SeeWorker(ctx, b.tx, "w1", []string{"served"}))
		waiting := b.submit(t, spec("a", "served"))
		fresh := b.submit(t, spec("a", "riscv64-nobody"))
		_, err := b.tx.Exec(ctx, `UPDATE groups SET watch_changed_at = now() - interval '1 hour'`)
		require.NoError(t, err)

		for range 2 {
			rep, err := b.graph.WatchTx(ctx, b.tx, 10*time.Minute)
			require.NoError(t, err)
			require.Empty(t, rep.Canceled)
		}
		for _, g := range []int64{running, waiting, fresh} {
			require.NotEqual(t, GroupCanceled, b.group(t, g).State)
		}
	})

	t.Run("SettlesGroupLeftOpen", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"))
		_, err := b.tx.Exec(ctx, `UPDATE job_graph SET state = 'complete' WHERE group_id = $1`, g)
		require.NoError(t, err)
		rep, err := b.graph.WatchTx(ctx, b.tx, time.Hour)
		require.NoError(t, err)
		require.Equal(t, []int64{g}, rep.Settled)
		require.Equal(t, GroupComplete, b.group(t, g).State)
	})
}

func TestRecountRepairsDrift(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"), spec("c", "linux", "b"))
	a := b.take(t, "linux")
	b.report(t, a, queue.BuildSucceeded)
	// Job ids come from a sequence that tests running beside this one draw from too, so b's id
	// is looked up, not assumed to follow a's.
	var bID int64
	err := b.tx.QueryRow(ctx, `UPDATE job_graph SET state = 'waiting_on_dependency', waiting_on_count = 3
		WHERE group_id = $1 AND name = 'b' RETURNING id`, g).Scan(&bID)
	require.NoError(t, err)

	rep, err := b.graph.RecountTx(ctx, b.tx)
	require.NoError(t, err)
	require.Equal(t, []int64{bID}, rep.CountersFixed)
	require.Equal(t, []int64{bID}, rep.MadeReady)
	require.Equal(t, Ready, b.state(t, g, "b"))
	drift, err := Drift(ctx, b.tx)
	require.NoError(t, err)
	require.Empty(t, drift[g])
}
