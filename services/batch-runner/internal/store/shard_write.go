package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/shared/postgres"
)

// ShardStarted identifies one attempt at one shard of a batch.
type ShardStarted struct {
	BatchID int64
	Shard   int
	Attempt int
}

// ShardsCreate records that batch s runs as shards of the given numbers of miners, worked by
// the given River jobs: one pending row per shard, in tx, which also inserts the shards' jobs.
func ShardsCreate(ctx context.Context, tx pgx.Tx, s Started, sizes []int, riverJobIDs []int64) error {
	if _, err := tx.Exec(ctx, `UPDATE batches SET shards = $2 WHERE id = $1`, s.ID, len(sizes)); err != nil {
		return fmt.Errorf("mark batch %d sharded: %w", s.ID, err)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO batch_shards (batch_id, shard, miners, river_job_id)
		SELECT $1, n - 1, size, job FROM unnest($2::int[], $3::bigint[]) WITH ORDINALITY AS t (size, job, n)`,
		s.ID, sizes, riverJobIDs)
	if err != nil {
		return fmt.Errorf("create %d shards of batch %d: %w", len(sizes), s.ID, err)
	}
	return nil
}

// ShardStart begins an attempt at a shard: the first delivery of its job, or River's retry of an
// attempt whose process died. A shard already finished (done or failed), or whose batch is no
// longer running, gives ErrAlreadyDone: a redelivered job does nothing.
func ShardStart(ctx context.Context, db postgres.DBTX, batchID int64, shard int, riverJobID int64) (ShardStarted, error) {
	s := ShardStarted{BatchID: batchID, Shard: shard}
	err := db.QueryRow(ctx, `
		UPDATE batch_shards s SET state = 'running', attempt = s.attempt + 1, river_job_id = $3,
		       offer_ready_at = NULL, max_spin_us = NULL, ready_at = NULL, clock_skew_us = NULL, error = NULL,
		       started_at = clock_timestamp(), finished_at = NULL
		FROM batches b
		WHERE s.batch_id = $1 AND s.shard = $2 AND s.state IN ('pending', 'running')
		  AND b.id = s.batch_id AND b.state = 'running'
		RETURNING s.attempt`, batchID, shard, riverJobID).Scan(&s.Attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ShardStarted{}, ErrAlreadyDone
	}
	if err != nil {
		return ShardStarted{}, fmt.Errorf("start shard %d of batch %d: %w", shard, batchID, err)
	}
	return s, nil
}

// ShardReady records that the shard's executors are ready and its frames built at readyAt (its
// own clock), with the database's clock minus the shard's, measured over one round trip and
// returned. A stale attempt gives ErrConflict.
func ShardReady(ctx context.Context, db postgres.DBTX, s ShardStarted, readyAt time.Time) (time.Duration, error) {
	var dbNow time.Time
	sent := time.Now()
	if err := db.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		return 0, fmt.Errorf("read database clock for shard %d of batch %d: %w", s.Shard, s.BatchID, err)
	}
	got := time.Now()
	skew := dbNow.Sub(sent.Add(got.Sub(sent) / 2))
	tag, err := db.Exec(ctx, `
		UPDATE batch_shards SET ready_at = $4, clock_skew_us = $5
		WHERE batch_id = $1 AND shard = $2 AND attempt = $3 AND state = 'running'`,
		s.BatchID, s.Shard, s.Attempt, readyAt, skew.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("mark shard %d of batch %d ready: %w", s.Shard, s.BatchID, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, fmt.Errorf("mark shard %d of batch %d attempt %d ready: %w", s.Shard, s.BatchID, s.Attempt, ErrConflict)
	}
	return skew, nil
}

// SendAtState is what a ready shard polls: the agreed send instant once fixed, and the shards
// still expected: pending or running, not ready, and part of the offer agreement (a shard that
// missed the offer instant is late for the send instant too, and nobody waits for it twice).
func SendAtState(ctx context.Context, db postgres.DBTX, batchID int64) (*time.Time, []int32, error) {
	var (
		sendAt  *time.Time
		waiting []int32
	)
	err := db.QueryRow(ctx, `
		SELECT b.send_at, coalesce((SELECT array_agg(s.shard ORDER BY s.shard) FROM batch_shards s
		        WHERE s.batch_id = b.id AND s.ready_at IS NULL AND s.state IN ('pending', 'running')
		          AND s.offer_ready_at IS NOT NULL), '{}')
		FROM batches b WHERE b.id = $1`, batchID).Scan(&sendAt, &waiting)
	if err != nil {
		return nil, nil, fmt.Errorf("send instant of batch %d: %w", batchID, mapErr(err))
	}
	return sendAt, waiting, nil
}

// SendAtFix fixes the batch's send instant at the database's now plus margin, unless it is fixed
// already: of all the shards that try, exactly one succeeds, and it alone reports true.
func SendAtFix(ctx context.Context, db postgres.DBTX, batchID int64, margin time.Duration) (bool, error) {
	tag, err := db.Exec(ctx, `
		UPDATE batches SET send_at = clock_timestamp() + make_interval(secs => $2)
		WHERE id = $1 AND send_at IS NULL`, batchID, margin.Seconds())
	if err != nil {
		return false, fmt.Errorf("fix send instant of batch %d: %w", batchID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ShardFinish writes a shard's results in tx, guarded so that only the running attempt can: a
// second finish is ErrConflict and writes nothing.
func ShardFinish(ctx context.Context, tx pgx.Tx, s ShardStarted, res *batch.Result) error {
	stages, _ := json.Marshal(res.Stages)
	tag, err := tx.Exec(ctx, `
		UPDATE batch_shards SET state = 'done', finished_at = clock_timestamp(), stages = $4,
		       released_at = $5, send_spread_us = $6, pregenerated = $7, pregenerated_used = $8, extra_generated = $9
		WHERE batch_id = $1 AND shard = $2 AND attempt = $3 AND state = 'running'`,
		s.BatchID, s.Shard, s.Attempt, stages, ts(res.HotRelease), res.SendSpread.Microseconds(),
		res.Pregenerated, res.PregeneratedUsed, res.ExtraGenerated)
	if err != nil {
		return fmt.Errorf("finish shard %d of batch %d: %w", s.Shard, s.BatchID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("finish shard %d of batch %d attempt %d: %w", s.Shard, s.BatchID, s.Attempt, ErrConflict)
	}
	return writeResults(ctx, tx, s.BatchID, s.Attempt, &s.Shard, res)
}

// ShardFail marks a shard's attempt failed, for good, with its stage timings and events.
func ShardFail(ctx context.Context, tx pgx.Tx, s ShardStarted, cause error, res *batch.Result) error {
	stages := []byte("[]")
	if res != nil {
		stages, _ = json.Marshal(res.Stages)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE batch_shards SET state = 'failed', error = $4, stages = $5, finished_at = clock_timestamp()
		WHERE batch_id = $1 AND shard = $2 AND attempt = $3 AND state = 'running'`,
		s.BatchID, s.Shard, s.Attempt, cause.Error(), stages); err != nil {
		return fmt.Errorf("fail shard %d of batch %d: %w", s.Shard, s.BatchID, err)
	}
	if res == nil {
		return nil
	}
	return eventsWrite(ctx, tx, s.BatchID, s.Attempt, &s.Shard, res.Events)
}
