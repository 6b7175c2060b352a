package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/testdb"
)

// shardResult is one shard's result: one completed job of miner.
func shardResult(miner string) *batch.Result {
	now := time.Now()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	uuid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	return &batch.Result{
		Stages:    []batch.Stage{{Name: "hot", StartedAt: now, FinishedAt: now, Counts: map[string]int64{"sent": 1}}},
		Manifests: []batch.ManifestEntry{{Miner: miner, Class: "always_on.test", Declared: 1, Tested: 1}},
		Jobs: []batch.JobResult{{UUID: uuid, Miner: miner, Class: "always_on.test", Generator: "pow_v1",
			Outcome: batch.OutcomeCompleted, Reason: batch.ReasonSuccess, Score: 1,
			BeforeSend: now, AfterSend: now.Add(time.Millisecond), EndAt: now.Add(2 * time.Millisecond),
			TimeTook: 2 * time.Millisecond, TimeLimit: time.Second}},
		Events:     []sysevent.Event{{Type: sysevent.TypeTelemetry, Subtype: sysevent.SyntheticBatch, At: now, Data: []byte(`{}`)}},
		HotRelease: now, SendSpread: time.Millisecond,
	}
}

// shardedBatch creates a batch of riverJobID in two shards of one miner each, in db.
func shardedBatch(t *testing.T, tx pgx.Tx, riverJobID int64) Started {
	t.Helper()
	ctx := context.Background()
	s, err := BatchStart(ctx, tx, riverJobID, "api", time.Hour, time.Minute)
	require.NoError(t, err)
	require.NoError(t, ShardsCreate(ctx, tx, s, []int{1, 1}, []int64{riverJobID*10 + 1, riverJobID*10 + 2}))
	return s
}

// shardedBatchWithJobs creates a batch of riverJobID in two shards of one miner each, worked by
// two run_batch_shard jobs inserted through River, in a transaction on a database of its own,
// rolled back when the test ends.
func shardedBatchWithJobs(t *testing.T, riverJobID int64) (pgx.Tx, Started, []int64) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.NewPool(t, "batch_runner")
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	ins, err := queue.NewInserter(pool, queue.BatchRunner)
	require.NoError(t, err)
	b, err := BatchStart(ctx, tx, riverJobID, "api", time.Hour, time.Minute)
	require.NoError(t, err)
	var jobIDs []int64
	for shard := range 2 {
		res, err := ins.InsertTx(ctx, tx, queue.RunBatchShardArgs{BatchID: b.ID, Shard: shard}, nil)
		require.NoError(t, err)
		jobIDs = append(jobIDs, res.Job.ID)
	}
	require.NoError(t, ShardsCreate(ctx, tx, b, []int{1, 1}, jobIDs))
	return tx, b, jobIDs
}

func TestShardedBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	setup := func(t *testing.T) pgx.Tx {
		t.Helper()
		tx, err := testdb.NewPool(t, "batch_runner").Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		return tx
	}

	t.Run("LastShardEndsTheBatchOnce", func(t *testing.T) {
		t.Parallel()
		tx := setup(t)
		b := shardedBatch(t, tx, 301)
		first, err := ShardStart(ctx, tx, b.ID, 0, 3011, time.Minute)
		require.NoError(t, err)
		// The process working shard 0 died; River hands its job out again.
		retry, err := ShardStart(ctx, tx, b.ID, 0, 3011, time.Minute)
		require.NoError(t, err)
		require.Equal(t, 2, retry.Attempt)
		other, err := ShardStart(ctx, tx, b.ID, 1, 3012, time.Minute)
		require.NoError(t, err)

		require.ErrorIs(t, ShardFinish(ctx, tx, first, shardResult("m0")), ErrConflict, "a stale attempt writes nothing")
		require.NoError(t, ShardFinish(ctx, tx, retry, shardResult("m0")))
		end, err := BatchEndShards(ctx, tx, b.ID)
		require.NoError(t, err)
		require.False(t, end.Ended, "shard 1 still runs")
		require.NoError(t, ShardFinish(ctx, tx, other, shardResult("m1")))
		end, err = BatchEndShards(ctx, tx, b.ID)
		require.NoError(t, err)
		require.True(t, end.Ended)
		require.True(t, end.Done)
		end, err = BatchEndShards(ctx, tx, b.ID)
		require.NoError(t, err)
		require.False(t, end.Ended, "a batch ends once")

		ended, err := ShardStart(ctx, tx, b.ID, 1, 3012, time.Minute)
		require.ErrorIs(t, err, ErrAlreadyDone, "a shard job delivered after its shard finished runs nothing")
		require.ErrorContains(t, err, fmt.Sprintf("shard 1 of batch %d is done (the batch is done)", b.ID))
		require.Equal(t, ShardStarted{BatchID: b.ID, Shard: 1, Attempt: 1, JobID: 3012}, ended)
		_, err = ShardStart(ctx, tx, b.ID, 7, 3012, time.Minute)
		require.ErrorIs(t, err, ErrNotFound, "no such shard")
		_, err = BatchStart(ctx, tx, 301, "api", time.Hour, time.Minute)
		require.ErrorIs(t, err, ErrAlreadyDone)
		got, err := BatchGet(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Equal(t, BatchDone, got.State)
		require.Equal(t, 2, got.ShardCount)
		require.Equal(t, map[batch.Outcome]int{batch.OutcomeCompleted: 2}, got.Counts)
		var stages []batch.Stage
		require.NoError(t, json.Unmarshal(got.Stages, &stages))
		require.Len(t, stages, 1, "the shards' stages merged")
		require.Equal(t, map[string]int64{"sent": 2}, stages[0].Counts)
		totals, err := ScoreTotals(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Len(t, totals, 2)
		require.Equal(t, 1, totals[0].Completed)
		shards, err := ShardList(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Len(t, shards, 2)
		require.Equal(t, ShardDone, shards[0].State)
		require.Equal(t, 2, shards[0].Attempt)
	})

	t.Run("SendAtIsFixedOnce", func(t *testing.T) {
		t.Parallel()
		tx := setup(t)
		b := shardedBatch(t, tx, 401)
		s0, err := ShardStart(ctx, tx, b.ID, 0, 4011, time.Minute)
		require.NoError(t, err)
		_, err = ShardReady(ctx, tx, s0, time.Now())
		require.NoError(t, err)
		_, waiting, err := SendAtState(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Empty(t, waiting, "shard 1 missed the offer instant: nobody waits for it to send")
		s1, err := ShardStart(ctx, tx, b.ID, 1, 4012, time.Minute)
		require.NoError(t, err)
		require.NoError(t, ShardOfferReady(ctx, tx, s1, time.Now(), time.Second))
		sendAt, waiting, err := SendAtState(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Nil(t, sendAt)
		require.Equal(t, []int32{1}, waiting, "shard 1 offered and is not ready yet")

		before := dbClock(t, tx)
		fixed, err := SendAtFix(ctx, tx, b.ID, 200*time.Millisecond)
		require.NoError(t, err)
		require.True(t, fixed)
		after := dbClock(t, tx)
		fixed, err = SendAtFix(ctx, tx, b.ID, time.Hour)
		require.NoError(t, err)
		require.False(t, fixed, "the instant is fixed once")
		sendAt, _, err = SendAtState(ctx, tx, b.ID)
		require.NoError(t, err)
		require.NotNil(t, sendAt)
		require.WithinRange(t, *sendAt, before.Add(200*time.Millisecond), after.Add(200*time.Millisecond),
			"the database's clock at the fix plus the margin")
	})

	t.Run("OfferIsFixedOnceWithTheLongestSpinUp", func(t *testing.T) {
		t.Parallel()
		tx := setup(t)
		b := shardedBatch(t, tx, 451)
		for shard, spin := range []time.Duration{2 * time.Second, 4 * time.Minute} {
			s, err := ShardStart(ctx, tx, b.ID, shard, int64(4511+shard), time.Minute)
			require.NoError(t, err)
			offer, waiting, err := OfferState(ctx, tx, b.ID)
			require.NoError(t, err)
			require.Nil(t, offer)
			require.Equal(t, []int32{int32(shard), 1}[shard:], waiting)
			require.NoError(t, ShardOfferReady(ctx, tx, s, time.Now(), spin))
		}
		before := dbClock(t, tx)
		fixed, err := OfferFix(ctx, tx, b.ID, 100*time.Millisecond)
		require.NoError(t, err)
		require.True(t, fixed)
		after := dbClock(t, tx)
		fixed, err = OfferFix(ctx, tx, b.ID, time.Hour)
		require.NoError(t, err)
		require.False(t, fixed, "the offer is fixed once")
		offer, waiting, err := OfferState(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Empty(t, waiting)
		require.Equal(t, 4*time.Minute, offer.MaxSpin, "the batch's stagger covers its longest spin-up")
		require.WithinRange(t, offer.At, before.Add(100*time.Millisecond), after.Add(100*time.Millisecond),
			"the database's clock at the fix plus the margin")
	})

	t.Run("AbandonedOnlyWithoutALiveShardJob", func(t *testing.T) {
		t.Parallel()
		tx, old, jobIDs := shardedBatchWithJobs(t, 701)
		_, err := tx.Exec(ctx, `UPDATE batches SET started_at = started_at - interval '1 hour' WHERE id = $1`, old.ID)
		require.NoError(t, err)

		// A shard's job may still run (River retries a killed shard after RESCUE_AFTER).
		sp, err := tx.Begin(ctx)
		require.NoError(t, err)
		_, err = BatchStart(ctx, sp, 702, "api", time.Minute, time.Minute)
		require.ErrorIs(t, err, ErrConflict, "the sharded batch still runs")
		require.NoError(t, sp.Rollback(ctx))

		// River gave up on both shard jobs: the batch is abandoned.
		for _, id := range jobIDs {
			queuetest.Finish(ctx, t, tx, queue.BatchRunner.Schema(), id, rivertype.JobStateDiscarded)
		}
		_, err = BatchStart(ctx, tx, 702, "api", time.Minute, time.Minute)
		require.NoError(t, err)
		got, err := BatchGet(ctx, tx, old.ID)
		require.NoError(t, err)
		require.Equal(t, BatchFailed, got.State)
	})

	t.Run("EveryShardFailed", func(t *testing.T) {
		t.Parallel()
		tx := setup(t)
		b := shardedBatch(t, tx, 501)
		for shard := range 2 {
			s, err := ShardStart(ctx, tx, b.ID, shard, int64(5011+shard), time.Minute)
			require.NoError(t, err)
			require.NoError(t, ShardFail(ctx, tx, s, errors.New("boom"), shardResult("m")))
		}
		end, err := BatchEndShards(ctx, tx, b.ID)
		require.NoError(t, err)
		require.True(t, end.Ended)
		require.False(t, end.Done, "nothing to score")
		got, err := BatchGet(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Equal(t, BatchFailed, got.State)
		events, err := EventList(ctx, tx, b.ID)
		require.NoError(t, err)
		require.Len(t, events, 2, "a failed shard keeps its events")
		require.NotNil(t, events[0].Shard)
	})
}

// TestShardsEndingAtOnceEndTheBatchOnce finishes both shards of a batch in two concurrent
// transactions, each writing its shard before either looks at the others: without the lock on
// the batch row, each could see the other still running and neither would end the batch (in
// about half the rounds, when both look before either commits), so it runs several rounds.
func TestShardsEndingAtOnceEndTheBatchOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t, "batch_runner")
	for round := range 6 {
		var b Started
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			b = shardedBatch(t, tx, int64(600+round))
			return nil
		}))
		started := make([]ShardStarted, 2)
		for i := range started {
			s, err := ShardStart(ctx, pool, b.ID, i, (600+int64(round))*10+1+int64(i), time.Minute)
			require.NoError(t, err)
			started[i] = s
		}
		var wrote, wg sync.WaitGroup
		wrote.Add(2)
		ends := make([]ShardedBatchEnd, 2)
		errs := make([]error, 2)
		for i := range started {
			wg.Go(func() { ends[i], errs[i] = endShard(ctx, pool, started[i], &wrote) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		require.NotEqual(t, ends[0].Ended, ends[1].Ended, "round %d: exactly one of the two ends the batch: %+v", round, ends)
		got, err := BatchGet(ctx, pool, b.ID)
		require.NoError(t, err)
		require.Equal(t, BatchDone, got.State)
	}
}

// endShard writes a shard's results, waits until the other shard wrote its own, then ends the
// batch if it is the last.
func endShard(ctx context.Context, pool *pgxpool.Pool, s ShardStarted, wrote *sync.WaitGroup) (ShardedBatchEnd, error) {
	var end ShardedBatchEnd
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		err := ShardFinish(ctx, tx, s, shardResult(fmt.Sprintf("m%d", s.Shard)))
		wrote.Done()
		if err != nil {
			return err
		}
		wrote.Wait()
		end, err = BatchEndShards(ctx, tx, s.BatchID)
		return err
	})
	return end, err
}

// dbClock reads the database's clock, which fixes the batch's instants.
func dbClock(t *testing.T, tx pgx.Tx) time.Time {
	t.Helper()
	now, err := queries.ClockGet(context.Background(), tx)
	require.NoError(t, err)
	return now
}
