package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store"
)

// coordinate is phase 1 of a sharded batch. It reports false, having written nothing, when the
// batch has no more miners than one shard takes: the batch then runs in this process as before.
// Otherwise the batch row, its shard rows, the shards' run_batch_shard jobs and this job's
// completion commit in one transaction, so a batch is either wholly handed to its shards or not
// at all, and a coordinator retried in River UI never hands it out twice (refuseRetry).
func (w *RunBatchWorker) coordinate(ctx context.Context, job *river.Job[queue.RunBatchArgs]) (bool, error) {
	miners, _, err := store.MinerList(ctx, w.Pool)
	if err != nil {
		return true, err
	}
	if len(miners) <= w.ShardMiners {
		return false, nil
	}
	shards := batch.SplitMiners(miners, w.ShardMiners, w.Batch.WithDefaults().Rand)
	var started store.Started
	err = pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if started, err = w.createShards(ctx, tx, job, len(miners), shards); err != nil {
			return err
		}
		return completeJob(ctx, tx, job, started.ID)
	})
	switch {
	case errors.Is(err, store.ErrAlreadyDone):
		return true, w.refuseRetry(ctx, job, started, err)
	case errors.Is(err, store.ErrConflict):
		return true, river.JobSnooze(w.BusySnooze)
	case err != nil:
		return true, w.stopped(ctx, job, err)
	}
	w.noteRetried(ctx, job, started)
	w.Logger.InfoContext(ctx, "batch handed to shards", "batch_id", started.ID, "miners", len(miners), "shards", len(shards))
	return true, nil
}

// createShards writes the batch row, its shards and their jobs in tx.
func (w *RunBatchWorker) createShards(ctx context.Context, tx pgx.Tx, job *river.Job[queue.RunBatchArgs], miners int, shards [][]batch.Miner) (store.Started, error) {
	started, err := w.start(ctx, tx, job)
	if err != nil {
		return started, err
	}
	_, previous, err := store.PreviousJobCounts(ctx, tx)
	if err != nil {
		return started, err
	}
	if err := store.BatchPlanned(ctx, tx, started, miners, previous, 0); err != nil {
		return started, err
	}
	sizes := make([]int, len(shards))
	params := make([]river.InsertManyParams, len(shards))
	for i, shard := range shards {
		sizes[i] = len(shard)
		args := queue.RunBatchShardArgs{BatchID: started.ID, Shard: i, Miners: make([]queue.ShardMiner, len(shard))}
		for k, m := range shard {
			args.Miners[k] = queue.ShardMiner{Hotkey: m.Hotkey, IP: m.IP, Port: m.Port}
		}
		params[i] = river.InsertManyParams{Args: args}
	}
	inserted, err := w.Inserters[queue.BatchRunner].InsertManyTx(ctx, tx, params)
	if err != nil {
		return started, fmt.Errorf("enqueue %d shards of batch %d: %w", len(params), started.ID, err)
	}
	jobIDs, err := shardJobIDs(started.ID, inserted)
	if err != nil {
		return started, err
	}
	return started, store.ShardsCreate(ctx, tx, started, sizes, jobIDs)
}

// shardJobIDs returns the River job id of each shard, in shard order. Each job says which shard
// it is: the order of River's results is not a promise.
func shardJobIDs(batchID int64, inserted []*rivertype.JobInsertResult) ([]int64, error) {
	ids := make([]int64, len(inserted))
	for _, res := range inserted {
		var args queue.RunBatchShardArgs
		if err := json.Unmarshal(res.Job.EncodedArgs, &args); err != nil {
			return nil, fmt.Errorf("args of shard job %d of batch %d: %w", res.Job.ID, batchID, err)
		}
		if args.Shard < 0 || args.Shard >= len(ids) {
			return nil, fmt.Errorf("shard job %d of batch %d: no shard %d", res.Job.ID, batchID, args.Shard)
		}
		ids[args.Shard] = res.Job.ID
	}
	return ids, nil
}
