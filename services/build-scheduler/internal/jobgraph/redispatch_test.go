package jobgraph

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
)

func TestRedispatch(t *testing.T) {
	t.Parallel()

	// age makes every ready job of the group look ready for an hour.
	age := func(t *testing.T, b *testBundle, groupID int64) {
		t.Helper()
		_, err := b.tx.Exec(t.Context(), `UPDATE job_graph SET updated_at = updated_at - interval '1 hour' WHERE group_id = $1`, groupID)
		require.NoError(t, err)
	}

	t.Run("ReissuesTokenLostWithItsWorker", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "redispatch-lost"), spec("b", "redispatch-lost", "a"))
		require.Equal(t, 1, b.tokens(t, "redispatch-lost"))
		// A worker takes the token and dies before its claim commits: River shows the token
		// running, the job is still ready.
		fetched := queuetest.FetchAsDeadProcess(ctx, t, b.tx, queue.BuildScheduler.Schema(), queue.BuildQueue("redispatch-lost"), "dead-worker", 10)
		require.Len(t, fetched, 1)

		n, err := b.graph.RedispatchTx(ctx, b.tx, time.Minute)
		require.NoError(t, err)
		require.Zero(t, n, "a job ready for less than the grace may still be being claimed")

		age(t, b, g)
		n, err = b.graph.RedispatchTx(ctx, b.tx, time.Minute)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, 2, b.tokens(t, "redispatch-lost"))
		n, err = b.graph.RedispatchTx(ctx, b.tx, time.Minute)
		require.NoError(t, err)
		require.Zero(t, n, "a second pass finds the new token queued")

		b.report(t, b.take(t, "redispatch-lost"), queue.BuildSucceeded)
		require.Equal(t, Ready, b.state(t, g, "b"))
	})

	t.Run("LeavesQueuedTokensAlone", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "redispatch-queued"), spec("b", "redispatch-queued"), spec("c", "redispatch-queued", "a"))
		age(t, b, g)
		n, err := b.graph.RedispatchTx(ctx, b.tx, time.Minute)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Equal(t, 2, b.tokens(t, "redispatch-queued"))
	})
}
