package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/testdb"
)

// expireAll waits until every lease of leases has run out by the database's clock and returns
// the expired leases.
func expireAll(t *testing.T, tx pgx.Tx, want int) []ExpiredLease {
	t.Helper()
	var leases []ExpiredLease
	require.Eventually(t, func() bool {
		var err error
		leases, err = ExpiredLeases(context.Background(), tx)
		require.NoError(t, err)
		return len(leases) == want
	}, 5*time.Second, 5*time.Millisecond)
	return leases
}

// TestLeaseTakeOverFencesTheDeadAttempt takes over a batch and a shard whose short leases ran out
// and checks that the attempts that held them can write nothing more, that their jobs delivered
// again find them taken over, and that the jobs they were handed to run them.
func TestLeaseTakeOverFencesTheDeadAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const short = 10 * time.Millisecond
	event := sysevent.One(sysevent.TypeRiverJob, sysevent.LeaseExpired, "test", nil)

	t.Run("Batch", func(t *testing.T) {
		t.Parallel()
		tx, err := testdb.NewPool(t, "batch_runner").Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		dead, err := BatchStart(ctx, tx, 901, "api", time.Hour, short)
		require.NoError(t, err)
		leases := expireAll(t, tx, 1)
		require.Equal(t, ExpiredLease{BatchID: dead.ID, Attempt: 1, JobID: 901, Until: leases[0].Until}, leases[0])

		ok, err := LeaseTakeOver(ctx, tx, leases[0], 902, time.Minute, event)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = LeaseTakeOver(ctx, tx, leases[0], 903, time.Minute, event)
		require.NoError(t, err)
		require.False(t, ok, "a batch is taken over once")

		require.ErrorIs(t, BatchLeaseRenew(ctx, tx, dead, time.Minute), ErrLeaseLost)
		require.ErrorIs(t, BatchFinish(ctx, tx, dead, shardResult("m0")), ErrLeaseLost, "the dead attempt writes nothing")
		require.ErrorIs(t, BatchFail(ctx, tx, dead, errors.New("x"), shardResult("m0")), ErrLeaseLost)
		rescued, err := BatchStart(ctx, tx, 901, "api", time.Hour, time.Minute)
		require.ErrorIs(t, err, ErrTakenOver, "River's rescue of the dead job runs nothing")
		require.Equal(t, Started{ID: dead.ID, Attempt: 1, JobID: 902}, rescued)

		next, err := BatchTakeOverStart(ctx, tx, dead.ID, 902, time.Minute)
		require.NoError(t, err)
		require.Equal(t, Started{ID: dead.ID, Attempt: 2, JobID: 902}, next)
		require.NoError(t, BatchLeaseRenew(ctx, tx, next, time.Minute))
		_, err = BatchTakeOverStart(ctx, tx, dead.ID, 903, time.Minute)
		require.ErrorIs(t, err, ErrTakenOver, "only the job the batch was handed to takes it")
		require.NoError(t, BatchFinish(ctx, tx, next, shardResult("m0")))
		_, err = BatchTakeOverStart(ctx, tx, dead.ID, 902, time.Minute)
		require.ErrorIs(t, err, ErrAlreadyDone)
		events, err := EventList(ctx, tx, dead.ID)
		require.NoError(t, err)
		require.Equal(t, sysevent.LeaseExpired, events[0].Subtype)
		require.Equal(t, 1, events[0].Attempt, "recorded on the dead attempt")
	})

	t.Run("Shard", func(t *testing.T) {
		t.Parallel()
		// The coordinator's jobs: the sweeper reads a dead shard's args to repeat them.
		tx, b, jobs := shardedBatchWithJobs(t, 911)
		dead, err := ShardStart(ctx, tx, b.ID, 0, jobs[0], short)
		require.NoError(t, err)
		_, err = ShardStart(ctx, tx, b.ID, 1, jobs[1], time.Hour)
		require.NoError(t, err)
		leases := expireAll(t, tx, 1)
		var args queue.RunBatchShardArgs
		require.NoError(t, json.Unmarshal(leases[0].ShardArgs, &args))
		require.Equal(t, queue.RunBatchShardArgs{BatchID: b.ID, Shard: 0}, args)

		ok, err := LeaseTakeOver(ctx, tx, leases[0], 9113, time.Minute, event)
		require.NoError(t, err)
		require.True(t, ok)
		require.ErrorIs(t, ShardLeaseRenew(ctx, tx, dead, time.Minute), ErrLeaseLost)
		require.ErrorIs(t, ShardOfferReady(ctx, tx, dead, time.Now(), time.Second), ErrLeaseLost)
		require.ErrorIs(t, ShardFinish(ctx, tx, dead, shardResult("m0")), ErrLeaseLost, "the dead attempt writes nothing")
		_, err = ShardStart(ctx, tx, b.ID, 0, jobs[0], time.Minute)
		require.ErrorIs(t, err, ErrTakenOver, "River's rescue of the dead job runs nothing")
		next, err := ShardStart(ctx, tx, b.ID, 0, 9113, time.Minute)
		require.NoError(t, err)
		require.Equal(t, ShardStarted{BatchID: b.ID, Shard: 0, Attempt: 2, JobID: 9113}, next)
		require.NoError(t, ShardFinish(ctx, tx, next, shardResult("m0")))
	})
}
