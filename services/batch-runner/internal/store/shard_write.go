package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store/dbsqlc"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/postgres"
)

// ShardStarted identifies one attempt at one shard of a batch.
type ShardStarted struct {
	BatchID int64
	Shard   int
	Attempt int
	// JobID is the River job working the attempt, which holds the shard's lease.
	JobID int64
}

// ShardsCreate records that batch s runs as shards of the given numbers of miners, worked by
// the given River jobs: one pending row per shard, in tx, which also inserts the shards' jobs.
func ShardsCreate(ctx context.Context, tx pgx.Tx, s Started, sizes []int, riverJobIDs []int64) error {
	if err := queries.BatchSetShards(ctx, tx, dbsqlc.BatchSetShardsParams{ID: s.ID, Shards: int32(len(sizes))}); err != nil {
		return fmt.Errorf("mark batch %d sharded: %w", s.ID, err)
	}
	sizes32 := make([]int32, len(sizes))
	for i, n := range sizes {
		sizes32[i] = int32(n)
	}
	err := queries.BatchShardCreate(ctx, tx, dbsqlc.BatchShardCreateParams{BatchID: s.ID, Sizes: sizes32, RiverJobIds: riverJobIDs})
	if err != nil {
		return fmt.Errorf("create %d shards of batch %d: %w", len(sizes), s.ID, err)
	}
	return nil
}

// ShardStart begins an attempt at a shard under a lease: the first delivery of its job, the job
// a takeover handed it to, or River's retry of either. A shard handed to another job gives
// ErrTakenOver. A shard already finished (done or failed), or whose batch is no longer running,
// gives ErrAlreadyDone with the shard's last attempt: its job was delivered again after it had
// ended, which only River UI's Retry does. A shard that does not exist gives ErrNotFound.
func ShardStart(ctx context.Context, db postgres.DBTX, batchID int64, shard int, riverJobID int64, lease time.Duration) (ShardStarted, error) {
	attempt, err := queries.BatchShardStart(ctx, db, dbsqlc.BatchShardStartParams{
		BatchID: batchID, Shard: int32(shard), RiverJobID: new(riverJobID), LeaseSecs: lease.Seconds(),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return shardEnded(ctx, db, batchID, shard, riverJobID)
	}
	if err != nil {
		return ShardStarted{}, fmt.Errorf("start shard %d of batch %d: %w", shard, batchID, err)
	}
	return ShardStarted{BatchID: batchID, Shard: shard, Attempt: int(attempt), JobID: riverJobID}, nil
}

// shardEnded is ErrTakenOver or ErrAlreadyDone for a shard job riverJobID may not start, saying
// what became of it.
func shardEnded(ctx context.Context, db postgres.DBTX, batchID int64, shard int, riverJobID int64) (ShardStarted, error) {
	row, err := queries.BatchShardGet(ctx, db, dbsqlc.BatchShardGetParams{BatchID: batchID, Shard: int32(shard)})
	if err != nil {
		return ShardStarted{}, fmt.Errorf("shard %d of batch %d: %w", shard, batchID, mapErr(err))
	}
	s := ShardStarted{BatchID: batchID, Shard: shard, Attempt: int(row.Attempt)}
	if row.RiverJobID != nil && *row.RiverJobID != riverJobID {
		s.JobID = *row.RiverJobID
		return s, fmt.Errorf("shard %d of batch %d was handed to run_batch_shard job %d when job %d's lease ran out (the shard is %s): %w",
			shard, batchID, s.JobID, riverJobID, row.State, ErrTakenOver)
	}
	s.JobID = riverJobID
	return s, fmt.Errorf("shard %d of batch %d is %s (the batch is %s): %w", shard, batchID, row.State, row.BatchState, ErrAlreadyDone)
}

// ShardReady records that the shard's executors are ready and its frames built at readyAt (its
// own clock), with the database's clock minus the shard's, measured over one round trip and
// returned. A stale attempt gives ErrConflict.
func ShardReady(ctx context.Context, db postgres.DBTX, s ShardStarted, readyAt time.Time) (time.Duration, error) {
	sent := time.Now()
	dbNow, err := queries.ClockGet(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("read database clock for shard %d of batch %d: %w", s.Shard, s.BatchID, err)
	}
	got := time.Now()
	skew := dbNow.Sub(sent.Add(got.Sub(sent) / 2))
	n, err := queries.BatchShardSetReady(ctx, db, dbsqlc.BatchShardSetReadyParams{
		BatchID: s.BatchID, Shard: int32(s.Shard), Attempt: int32(s.Attempt), RiverJobID: new(s.JobID),
		ReadyAt: new(readyAt), ClockSkewUs: new(skew.Microseconds()),
	})
	if err != nil {
		return 0, fmt.Errorf("mark shard %d of batch %d ready: %w", s.Shard, s.BatchID, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("mark shard %d of batch %d attempt %d ready: %w", s.Shard, s.BatchID, s.Attempt, ErrLeaseLost)
	}
	return skew, nil
}

// SendAtState is what a ready shard polls: the agreed send instant once fixed, and the shards
// still expected: pending or running, not ready, and part of the offer agreement (a shard that
// missed the offer instant is late for the send instant too, and nobody waits for it twice).
func SendAtState(ctx context.Context, db postgres.DBTX, batchID int64) (*time.Time, []int32, error) {
	row, err := queries.BatchSendAtGet(ctx, db, batchID)
	if err != nil {
		return nil, nil, fmt.Errorf("send instant of batch %d: %w", batchID, mapErr(err))
	}
	return row.SendAt, row.Waiting, nil
}

// SendAtFix fixes the batch's send instant at the database's now plus margin, unless it is fixed
// already: of all the shards that try, exactly one succeeds, and it alone reports true.
func SendAtFix(ctx context.Context, db postgres.DBTX, batchID int64, margin time.Duration) (bool, error) {
	n, err := queries.BatchSendAtFix(ctx, db, dbsqlc.BatchSendAtFixParams{ID: batchID, MarginSecs: margin.Seconds()})
	if err != nil {
		return false, fmt.Errorf("fix send instant of batch %d: %w", batchID, err)
	}
	return n == 1, nil
}

// ShardFinish writes a shard's results in tx, guarded so that only the running attempt, while its
// job holds the shard's lease, can: a second finish, or one after a takeover, is ErrLeaseLost (an
// ErrConflict) and writes nothing.
func ShardFinish(ctx context.Context, tx pgx.Tx, s ShardStarted, res *batch.Result) error {
	stages, _ := json.Marshal(res.Stages)
	n, err := queries.BatchShardFinish(ctx, tx, dbsqlc.BatchShardFinishParams{
		BatchID: s.BatchID, Shard: int32(s.Shard), Attempt: int32(s.Attempt), RiverJobID: new(s.JobID), Stages: stages,
		ReleasedAt: ts(res.HotRelease), SendSpreadUs: new(res.SendSpread.Microseconds()),
		Pregenerated: int32(res.Pregenerated), PregeneratedUsed: int32(res.PregeneratedUsed), ExtraGenerated: int32(res.ExtraGenerated),
	})
	if err != nil {
		return fmt.Errorf("finish shard %d of batch %d: %w", s.Shard, s.BatchID, err)
	}
	if n == 0 {
		return fmt.Errorf("finish shard %d of batch %d attempt %d: %w", s.Shard, s.BatchID, s.Attempt, ErrLeaseLost)
	}
	return writeResults(ctx, tx, s.BatchID, s.Attempt, &s.Shard, res)
}

// ShardEventsWrite bulk-writes system events of one attempt at a shard.
func ShardEventsWrite(ctx context.Context, tx pgx.Tx, s ShardStarted, events []sysevent.Event) error {
	return eventsWrite(ctx, tx, s.BatchID, s.Attempt, &s.Shard, events)
}

// ShardFail marks a shard's attempt failed, for good, with its stage timings and events; after a
// takeover it writes nothing and gives ErrLeaseLost.
func ShardFail(ctx context.Context, tx pgx.Tx, s ShardStarted, cause error, res *batch.Result) error {
	stages := []byte("[]")
	if res != nil {
		stages, _ = json.Marshal(res.Stages)
	}
	n, err := queries.BatchShardFail(ctx, tx, dbsqlc.BatchShardFailParams{
		BatchID: s.BatchID, Shard: int32(s.Shard), Attempt: int32(s.Attempt), RiverJobID: new(s.JobID), Error: new(cause.Error()), Stages: stages,
	})
	if err != nil {
		return fmt.Errorf("fail shard %d of batch %d: %w", s.Shard, s.BatchID, err)
	}
	if n == 0 {
		return fmt.Errorf("fail shard %d of batch %d attempt %d: %w", s.Shard, s.BatchID, s.Attempt, ErrLeaseLost)
	}
	if res == nil {
		return nil
	}
	return eventsWrite(ctx, tx, s.BatchID, s.Attempt, &s.Shard, res.Events)
}
