package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
)

// ShardedBatchEnd is what BatchEndShards found.
type ShardedBatchEnd struct {
	// Ended is true for the one call that moved the batch out of running.
	Ended bool
	// Done is true when at least one shard was done, so the batch is scored; false when every
	// shard failed.
	Done bool
	// StartedAt is when the batch's first stage started, for scorer.
	StartedAt time.Time
}

// BatchEndShards ends a sharded batch when every shard has finished, in tx, after the caller
// wrote its own shard's end. It locks the batch row first, so of two shards finishing at once the
// second sees the first's commit: exactly one call ends the batch, the last shard's. The lock is
// FOR NO KEY UPDATE: each shard's rows already hold a key-share lock on the batch row (their
// foreign keys), which FOR UPDATE would wait for, deadlocking two shards ending at once. The
// batch's stages are the shards' merged; its send spread is over every shard's job requests.
func BatchEndShards(ctx context.Context, tx pgx.Tx, batchID int64) (ShardedBatchEnd, error) {
	var state string
	if err := tx.QueryRow(ctx, `SELECT state FROM batches WHERE id = $1 FOR NO KEY UPDATE`, batchID).Scan(&state); err != nil {
		return ShardedBatchEnd{}, fmt.Errorf("lock batch %d: %w", batchID, mapErr(err))
	}
	var open, done int
	if err := tx.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state IN ('pending', 'running')), count(*) FILTER (WHERE state = 'done')
		FROM batch_shards WHERE batch_id = $1`, batchID).Scan(&open, &done); err != nil {
		return ShardedBatchEnd{}, fmt.Errorf("count open shards of batch %d: %w", batchID, err)
	}
	if state != "running" || open > 0 {
		return ShardedBatchEnd{}, nil
	}
	merged, err := mergedStages(ctx, tx, batchID)
	if err != nil {
		return ShardedBatchEnd{}, err
	}
	end := ShardedBatchEnd{Ended: true, Done: done > 0}
	if len(merged) > 0 {
		end.StartedAt = merged[0].StartedAt
	}
	stages, _ := json.Marshal(merged)
	if !end.Done {
		_, err = tx.Exec(ctx, `UPDATE batches SET state = 'failed', error = 'every shard failed', stages = $2,
			finished_at = clock_timestamp() WHERE id = $1`, batchID, stages)
	} else {
		_, err = tx.Exec(ctx, batchEndShardsSQL, batchID, stages)
	}
	if err != nil {
		return ShardedBatchEnd{}, fmt.Errorf("end sharded batch %d: %w", batchID, err)
	}
	return end, nil
}

const batchEndShardsSQL = `
	UPDATE batches b SET state = 'done', finished_at = clock_timestamp(), stages = $2,
	       pregenerated = s.pregenerated, pregenerated_used = s.used, extra_generated = s.extra,
	       hot_release_at = s.released, send_spread_us = j.spread
	FROM (SELECT sum(pregenerated) AS pregenerated, sum(pregenerated_used) AS used,
	             sum(extra_generated) AS extra, min(released_at) AS released
	      FROM batch_shards WHERE batch_id = $1) s,
	     (SELECT (extract(epoch FROM max(after_send_at) - min(before_send_at)) * 1e6)::bigint AS spread
	      FROM batch_jobs WHERE batch_id = $1 AND before_send_at IS NOT NULL AND after_send_at IS NOT NULL) j
	WHERE b.id = $1`

func mergedStages(ctx context.Context, tx pgx.Tx, batchID int64) ([]batch.Stage, error) {
	rows, err := tx.Query(ctx, `SELECT stages FROM batch_shards WHERE batch_id = $1 ORDER BY shard`, batchID)
	if err != nil {
		return nil, fmt.Errorf("stages of the shards of batch %d: %w", batchID, err)
	}
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([]batch.Stage, error) {
		var stages []batch.Stage
		err := row.Scan(&stages)
		return stages, err
	})
	if err != nil {
		return nil, fmt.Errorf("scan stages of the shards of batch %d: %w", batchID, err)
	}
	return batch.MergeStages(all), nil
}

// ScoreTotals sums a batch's written jobs per miner and executor class, as scorer takes them:
// every shard's jobs, read back in the transaction that ends the batch.
func ScoreTotals(ctx context.Context, tx pgx.Tx, batchID int64) ([]queue.MinerClassResult, error) {
	rows, err := tx.Query(ctx, `
		SELECT m.miner_hotkey, m.executor_class, m.tested,
		       count(j.job_uuid) FILTER (WHERE j.outcome = 'completed'),
		       count(j.job_uuid) FILTER (WHERE j.outcome = 'excused'),
		       count(j.job_uuid) FILTER (WHERE j.outcome NOT IN ('completed', 'excused'))
		FROM batch_manifests m
		LEFT JOIN batch_jobs j ON j.batch_id = m.batch_id AND j.miner_hotkey = m.miner_hotkey AND j.executor_class = m.executor_class
		WHERE m.batch_id = $1
		GROUP BY 1, 2, 3 ORDER BY 1, 2`, batchID)
	if err != nil {
		return nil, fmt.Errorf("score totals of batch %d: %w", batchID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[queue.MinerClassResult])
	if err != nil {
		return nil, fmt.Errorf("scan score totals of batch %d: %w", batchID, err)
	}
	return out, nil
}
