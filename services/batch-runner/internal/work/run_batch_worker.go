// Package work holds batch-runner's River workers.
package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// RunBatchWorker works run_batch: phase 1 (read miners, pregenerate, create the batch row),
// phase 2 (batch.Run, which has no database handle), phase 3 (one transaction with the results,
// the score_batch job for scorer and the completion of this job).
//
// Running it twice is harmless: the batch row is keyed by the River job id, a retried job takes
// over its own row, and results are written only by the transaction that flips the row from
// running to done, so a batch is never scored twice.
type RunBatchWorker struct {
	river.WorkerDefaults[queue.RunBatchArgs]

	Pool      *pgxpool.Pool
	Inserters queue.Inserters
	Logger    *slog.Logger
	Batch     batch.Config

	// Headroom is the share of the previous batch's jobs pregenerated (1.2: 20 % more).
	Headroom float64
	// JobTimeout bounds one batch; a running batch older than this is considered abandoned.
	JobTimeout time.Duration
	// PeakEvery marks every n-th batch as a peak batch for scoring (1: all).
	PeakEvery int64
	// BusySnooze is how long a run_batch job waits when another batch is running.
	BusySnooze time.Duration
	// Progress holds the live record of the batch in flight, for the API; nil keeps none.
	Progress *batch.Tracker
	// Metrics counts batches, stages and executors; nil counts nothing.
	Metrics *Metrics
	// ShardMiners, when positive, splits a batch of more miners than this into shards of at most
	// this many, each a run_batch_shard job (see coordinate); 0 runs every batch here.
	ShardMiners int
}

// Timeout implements river.Worker: a batch lasts minutes (the 4-minute spin-up alone).
func (w *RunBatchWorker) Timeout(*river.Job[queue.RunBatchArgs]) time.Duration { return w.JobTimeout }

// Work implements river.Worker.
func (w *RunBatchWorker) Work(ctx context.Context, job *river.Job[queue.RunBatchArgs]) error {
	begun := time.Now()
	if w.ShardMiners > 0 {
		if sharded, err := w.coordinate(ctx, job); sharded {
			return err
		}
	}
	started, plan, err := w.prepare(ctx, job)
	defer w.Progress.Done(plan.Progress)
	switch {
	case errors.Is(err, store.ErrAlreadyDone):
		w.Logger.Info("batch of this job already written; nothing to do", "job_id", job.ID)
		return nil
	case errors.Is(err, store.ErrConflict):
		return river.JobSnooze(w.BusySnooze)
	case err != nil:
		return err
	}
	res, err := runPhase2(ctx, w.Batch, plan)
	plan.Progress.SetPhase(batch.PhaseWrite)
	res.Events = append(res.Events, plan.Events.Drain()...)
	w.Metrics.ran(w.Logger, started.ID, res)
	if err == nil {
		err = w.finish(ctx, job, started, res)
	}
	if err != nil {
		w.Metrics.ended(store.BatchFailed)
		w.Logger.Warn("batch failed", "batch_id", started.ID, "attempt", job.Attempt, "max_attempts", job.MaxAttempts, "error", err)
		if w.fail(ctx, job, started, err, res) {
			return nil // the River job ended discarded with the batch
		}
		return fmt.Errorf("batch %d: %w", started.ID, err)
	}
	w.Metrics.ended(store.BatchDone)
	w.Logger.Info("batch done", "batch_id", started.ID, "attempt", job.Attempt, "jobs", len(res.Jobs),
		"send_spread", res.SendSpread, "duration", time.Since(begun))
	return nil
}

// runPhase2 runs batch.Run and turns a panic that escaped it into an error, so the events
// gathered so far are still written.
func runPhase2(ctx context.Context, cfg batch.Config, plan batch.Plan) (res *batch.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			plan.Events.Addf(sysevent.TypeValidatorFailure, sysevent.Panic, "batch panicked: %v", v)
			res, err = &batch.Result{}, fmt.Errorf("batch panicked: %v", v)
		}
	}()
	return batch.Run(ctx, cfg, plan)
}

// prepare is phase 1.
func (w *RunBatchWorker) prepare(ctx context.Context, job *river.Job[queue.RunBatchArgs]) (store.Started, batch.Plan, error) {
	started, err := store.BatchStart(ctx, w.Pool, job.ID, job.Args.Reason, w.JobTimeout)
	if err != nil {
		return store.Started{}, batch.Plan{}, err
	}
	plan := batch.Plan{
		BatchID: started.ID, Events: sysevent.New(nil),
		Progress: w.Progress.Start(started.ID, job.ID, started.Attempt),
	}
	miners, validators, err := store.MinerList(ctx, w.Pool)
	if err != nil {
		return started, plan, err
	}
	previous, total, err := store.PreviousJobCounts(ctx, w.Pool)
	if err != nil {
		return started, plan, err
	}
	pool, err := batch.Pregenerate(w.Batch.Generators, previous, w.Headroom, w.Batch.WithDefaults().Rand)
	if err != nil {
		return started, plan, err
	}
	plan.Miners, plan.Validators, plan.Jobs = miners, validators, pool
	if err := store.BatchPlanned(ctx, w.Pool, started, len(miners), total, pool.Pregenerated); err != nil {
		return started, plan, err
	}
	return started, plan, nil
}

// finish is phase 3: results, the scorer's job and this job's completion commit together.
func (w *RunBatchWorker) finish(ctx context.Context, job *river.Job[queue.RunBatchArgs], s store.Started, res *batch.Result) error {
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if err := store.BatchFinish(ctx, tx, s, res); err != nil {
			return err
		}
		started := time.Now()
		if len(res.Stages) > 0 {
			started = res.Stages[0].StartedAt
		}
		if err := enqueueScore(ctx, tx, w.Inserters[queue.Scorer], s.ID, started, w.PeakEvery); err != nil {
			return err
		}
		return completeJob(ctx, tx, job, s.ID)
	})
}

// completeJob completes job in tx, atomic with what the worker wrote there, and names the batch
// it ran in the job's metadata for River UI readers.
func completeJob[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T], batchID int64) error {
	return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCompleted, Metadata: batchMeta(batchID)})
}

// batchMeta is the River job metadata naming the batch a job ran.
func batchMeta(batchID int64) map[string]any { return map[string]any{"batch_id": batchID} }

// detached is a context for recording a failure: it outlives ctx's cancellation (shutdown),
// since losing the events of a batch that broke is what the design forbids, but not by long.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// fail records a failed attempt with its events, on a detached context. On the job's last
// attempt it also ends the River job discarded with the cause, in the same transaction, so River
// UI shows the run_batch job failed exactly when the batch has failed for good; an earlier
// attempt is left to River, which records the error and retries. An attempt stopped by shutdown
// is never the last. fail reports whether it ended the River job.
func (w *RunBatchWorker) fail(ctx context.Context, job *river.Job[queue.RunBatchArgs], s store.Started, cause error, res *batch.Result) bool {
	final := job.Attempt >= job.MaxAttempts && !errors.Is(ctx.Err(), context.Canceled)
	ctx, cancel := detached(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if err := store.BatchFail(ctx, tx, s, cause, res); err != nil || !final {
			return err
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{
			State: rivertype.JobStateDiscarded, Metadata: batchMeta(s.ID),
			Err: fmt.Errorf("batch %d failed on attempt %d of %d: %w", s.ID, job.Attempt, job.MaxAttempts, cause),
		})
	})
	if err != nil {
		w.Logger.Error("record failed batch", "batch_id", s.ID, "cause", cause, "error", err)
	}
	return final && err == nil
}

// enqueueScore enqueues score_batch on tx for a batch whose jobs tx has written. The totals per
// miner and class are read back from those rows (store.ScoreTotals), whether one job or several
// shards wrote them, so a sharded and an unsharded batch of the same miners are scored alike.
func enqueueScore(ctx context.Context, tx pgx.Tx, scorer *queue.Client, batchID int64, startedAt time.Time, peakEvery int64) error {
	totals, err := store.ScoreTotals(ctx, tx, batchID)
	if err != nil {
		return err
	}
	args := queue.ScoreBatchArgs{BatchID: batchID, StartedAt: startedAt, Peak: isPeak(batchID, peakEvery), Miners: totals}
	if _, err := scorer.InsertTx(ctx, tx, args, nil); err != nil {
		return fmt.Errorf("enqueue score_batch for batch %d: %w", batchID, err)
	}
	return nil
}

// isPeak tells whether a batch counts as a peak batch: every peakEvery-th (every one for ≤ 1).
func isPeak(batchID, peakEvery int64) bool { return peakEvery <= 1 || batchID%peakEvery == 0 }
