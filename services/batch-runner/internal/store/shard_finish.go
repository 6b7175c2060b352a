package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store/dbsqlc"
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
	state, err := queries.BatchLock(ctx, tx, batchID)
	if err != nil {
		return ShardedBatchEnd{}, fmt.Errorf("lock batch %d: %w", batchID, mapErr(err))
	}
	count, err := queries.BatchShardCount(ctx, tx, batchID)
	if err != nil {
		return ShardedBatchEnd{}, fmt.Errorf("count open shards of batch %d: %w", batchID, err)
	}
	if BatchState(state) != BatchRunning || count.Open > 0 {
		return ShardedBatchEnd{}, nil
	}
	merged, err := mergedStages(ctx, tx, batchID)
	if err != nil {
		return ShardedBatchEnd{}, err
	}
	end := ShardedBatchEnd{Ended: true, Done: count.Done > 0}
	if len(merged) > 0 {
		end.StartedAt = merged[0].StartedAt
	}
	stages, _ := json.Marshal(merged)
	if !end.Done {
		err = queries.BatchFailShards(ctx, tx, dbsqlc.BatchFailShardsParams{ID: batchID, Stages: stages})
	} else {
		err = queries.BatchFinishShards(ctx, tx, dbsqlc.BatchFinishShardsParams{ID: batchID, Stages: stages})
	}
	if err != nil {
		return ShardedBatchEnd{}, fmt.Errorf("end sharded batch %d: %w", batchID, err)
	}
	return end, nil
}

func mergedStages(ctx context.Context, tx pgx.Tx, batchID int64) ([]batch.Stage, error) {
	rows, err := queries.BatchShardStageList(ctx, tx, batchID)
	if err != nil {
		return nil, fmt.Errorf("stages of the shards of batch %d: %w", batchID, err)
	}
	all := make([][]batch.Stage, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal(r, &all[i]); err != nil {
			return nil, fmt.Errorf("read stages of the shards of batch %d: %w", batchID, err)
		}
	}
	return batch.MergeStages(all), nil
}

// ScoreTotals sums a batch's written jobs per miner and executor class, as scorer takes them:
// every shard's jobs, read back in the transaction that ends the batch.
func ScoreTotals(ctx context.Context, tx pgx.Tx, batchID int64) ([]queue.MinerClassResult, error) {
	rows, err := queries.BatchScoreTotalList(ctx, tx, batchID)
	if err != nil {
		return nil, fmt.Errorf("score totals of batch %d: %w", batchID, err)
	}
	out := make([]queue.MinerClassResult, len(rows))
	for i, r := range rows {
		out[i] = queue.MinerClassResult{Hotkey: r.MinerHotkey, ExecutorClass: r.ExecutorClass, Executors: int(r.Tested),
			Completed: int(r.Completed), Excused: int(r.Excused), Failed: int(r.Failed)}
	}
	return out, nil
}
