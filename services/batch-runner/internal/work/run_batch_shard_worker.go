package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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

// RunBatchShardWorker works run_batch_shard: one shard of a sharded batch, on any replica. Its
// own phase 1 reads what the shard needs (validators, the previous batch's counts for its
// miners); phase 2 is batch.Run on the shard's miners, with the send instant agreed with the
// other shards between availability and the release; phase 3 writes the shard's results and, for
// the last shard to finish, ends the batch and enqueues score_batch, all with this job's
// completion in one transaction.
//
// Running it twice is harmless: a shard is finished once (its row moves from running to done or
// failed for the current attempt only, in the transaction that ends this job), River's retry of
// an attempt whose process died takes the shard over with attempt+1, and a job delivered after
// its shard finished, which only River UI's Retry does, runs nothing and ends cancelled.
type RunBatchShardWorker struct {
	river.WorkerDefaults[queue.RunBatchShardArgs]

	Pool      *pgxpool.Pool
	Inserters queue.Inserters
	Logger    *slog.Logger
	Batch     batch.Config
	Agreement Agreement
	Metrics   *Metrics // nil counts nothing

	// Headroom, JobTimeout, PeakEvery and Lease are as on RunBatchWorker.
	Headroom   float64
	JobTimeout time.Duration
	PeakEvery  int64
	Lease      time.Duration
}

// Timeout implements river.Worker: a shard lasts as long as a batch.
func (w *RunBatchShardWorker) Timeout(*river.Job[queue.RunBatchShardArgs]) time.Duration {
	return w.JobTimeout
}

// ShardRetryDelay is how soon River runs a shard again after an attempt that errored or whose
// process died (the rescuer uses NextRetry too): the shard's batch waits for it, so River's
// backoff of attempt⁴ seconds would only keep the other shards' results from scorer longer.
const ShardRetryDelay = time.Second

// NextRetry implements river.Worker.
func (w *RunBatchShardWorker) NextRetry(*river.Job[queue.RunBatchShardArgs]) time.Time {
	return time.Now().Add(ShardRetryDelay)
}

// Work implements river.Worker. A shard that fails is finished for good (its events kept): its
// batch's send instant is gone, so a retry could only send out of step with the others.
func (w *RunBatchShardWorker) Work(ctx context.Context, job *river.Job[queue.RunBatchShardArgs]) error {
	attempt, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	shard, plan, err := w.prepare(attempt, job, lost)
	defer plan.StopLease()
	what := fmt.Sprintf("shard %d of batch %d attempt %d", shard.Shard, shard.BatchID, shard.Attempt)
	switch {
	case errors.Is(err, store.ErrTakenOver):
		return takenOverEnd(ctx, w.Pool, w.Logger, job, shard.BatchID, shard.JobID, err)
	case err != nil && shard.Attempt > 0 && leaseLost(attempt, err):
		plan.StopLease()
		return lostLeaseEnd(w.Logger, job.JobRow, what, err)
	case errors.Is(err, store.ErrAlreadyDone):
		return w.refuseRetry(ctx, job, shard, err)
	case errors.Is(err, store.ErrNotFound):
		return river.JobCancel(err)
	case err != nil && queue.CancelledRemotely(ctx) && shard.Attempt > 0:
		return w.failed(ctx, job, shard, err, nil)
	case err != nil && queue.CancelledRemotely(ctx):
		stopperLogged(ctx, w.Pool, w.Logger, job.JobRow).log(ctx, w.Logger, job.JobRow, "stopped before the shard started; job cancelled", "error", err)
		return err
	case err != nil:
		plan.StopLease()
		return err
	}
	res, err := runPhase2(attempt, w.Batch, plan.Plan)
	plan.StopLease()
	res.Events = append(res.Events, plan.Events.Drain()...)
	w.Metrics.ran(ctx, w.Logger, shard.BatchID, res)
	var ended store.BatchState
	if err == nil && !leaseLost(attempt, nil) {
		ended, err = w.finish(ctx, job, shard, res)
	}
	if leaseLost(attempt, err) {
		return lostLeaseEnd(w.Logger, job.JobRow, what, err)
	}
	if err != nil {
		return w.failed(ctx, job, shard, err, res)
	}
	w.Metrics.ended(ended)
	w.Logger.InfoContext(ctx, "shard done", "batch_id", shard.BatchID, "shard", shard.Shard, "jobs", len(res.Jobs),
		"released_at", res.HotRelease, "send_spread", res.SendSpread)
	return nil
}

// failed finishes a shard whose attempt failed (fail) and tells River what is left to do.
func (w *RunBatchShardWorker) failed(ctx context.Context, job *river.Job[queue.RunBatchShardArgs], s store.ShardStarted, cause error, res *batch.Result) error {
	cause = fmt.Errorf("shard %d of batch %d: %w", s.Shard, s.BatchID, cause)
	w.Logger.WarnContext(ctx, "shard failed", "batch_id", s.BatchID, "shard", s.Shard, "error", cause)
	if ended, ok := w.fail(ctx, job, s, cause, res); ok {
		w.Metrics.ended(ended)
		return nil // the River job ended with the shard, discarded or cancelled
	}
	return river.JobCancel(cause)
}

// refuseRetry ends a job delivered again after its shard finished, which only River UI's Retry
// does: a shard cannot run once its batch's send instant is gone. The job ends cancelled with an
// error naming the route that runs a new batch, and an event on the batch says so, in one
// transaction.
func (w *RunBatchShardWorker) refuseRetry(ctx context.Context, job *river.Job[queue.RunBatchShardArgs], s store.ShardStarted, ended error) error {
	cause := fmt.Errorf("%w; a shard cannot run again once its batch's send instant is gone: use POST /v1/batches to run a new batch", ended)
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		event := sysevent.One(sysevent.TypeRiverJob, sysevent.RetryRefused,
			fmt.Sprintf("River UI's Retry on run_batch_shard job %d refused: %v", job.ID, ended),
			map[string]any{"river_job_id": job.ID, "job_attempt": job.Attempt})
		if err := store.ShardEventsWrite(ctx, tx, s, []sysevent.Event{event}); err != nil {
			return err
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCancelled, Err: cause, Output: batchOutput(s.BatchID)})
	})
	if err != nil {
		return fmt.Errorf("refuse retry of run_batch_shard job %d: %w", job.ID, err)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, "nothing run, job cancelled: "+ended.Error(), "batch_id", s.BatchID, "shard", s.Shard)
	return nil
}

// prepare is the shard's phase 1: it takes the shard over and plans its phase 2. Once the shard is
// this attempt's, its lease is kept until StopLease; losing it cancels ctx through lost.
func (w *RunBatchShardWorker) prepare(ctx context.Context, job *river.Job[queue.RunBatchShardArgs], lost context.CancelCauseFunc) (store.ShardStarted, leasedPlan, error) {
	plan := leasedPlan{StopLease: func() {}}
	leased := time.Now()
	shard, err := store.ShardStart(ctx, w.Pool, job.Args.BatchID, job.Args.Shard, job.ID, w.Lease)
	if err != nil {
		return shard, plan, err
	}
	quiet := new(atomic.Bool)
	plan.StopLease = sync.OnceFunc(keepLease(w.Lease, leased, quiet, func(ctx context.Context) error {
		return store.ShardLeaseRenew(ctx, w.Pool, shard, w.Lease)
	}, lost, w.Logger.With("batch_id", shard.BatchID, "shard", shard.Shard, "attempt", shard.Attempt, "job_id", job.ID)))
	miners := make([]batch.Miner, len(job.Args.Miners))
	for i, m := range job.Args.Miners {
		miners[i] = batch.Miner{Hotkey: m.Hotkey, IP: m.IP, Port: m.Port}
	}
	_, validators, err := store.MinerList(ctx, w.Pool)
	if err != nil {
		return shard, plan, err
	}
	pool, err := w.pregenerate(ctx, miners)
	if err != nil {
		return shard, plan, err
	}
	events := sysevent.New(nil)
	agreement := &shardAgreement{Agreement: w.Agreement, pool: w.Pool, shard: shard, events: events}
	plan.Plan = batch.Plan{
		Quiet:   quiet.Store,
		BatchID: shard.BatchID, Miners: miners, Validators: validators, Jobs: pool, Events: events,
		AgreeOffer: agreement.agreeOffer, Agree: agreement.agree, AgreeWithin: w.Agreement.within(),
	}
	return shard, plan, nil
}

// pregenerate makes the shard's share of the jobs in advance: the previous batch's counts for
// its own miners only, with the headroom.
func (w *RunBatchShardWorker) pregenerate(ctx context.Context, miners []batch.Miner) (*batch.JobPool, error) {
	previous, _, err := store.PreviousJobCounts(ctx, w.Pool)
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, m := range miners {
		ours[m.Hotkey] = true
	}
	for pair := range previous {
		if !ours[pair.Miner] {
			delete(previous, pair)
		}
	}
	return batch.Pregenerate(w.Batch.Generators, previous, w.Headroom, w.Batch.WithDefaults().Rand)
}

// finish is the shard's phase 3: its results, the batch's end and score_batch when it is the
// last shard, and this job's completion commit together.
// It returns how the batch ended when this shard was its last ("" otherwise).
func (w *RunBatchShardWorker) finish(ctx context.Context, job *river.Job[queue.RunBatchShardArgs], s store.ShardStarted, res *batch.Result) (store.BatchState, error) {
	var ended store.BatchState
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if err := store.ShardFinish(ctx, tx, s, res); err != nil {
			return err
		}
		var err error
		if ended, err = w.endBatch(ctx, tx, s.BatchID); err != nil {
			return err
		}
		return completeJob(ctx, tx, job, s.BatchID)
	})
	return ended, err
}

// endBatch ends the batch when this shard is the last to finish, and enqueues score_batch with
// every shard's jobs when at least one shard was done. It returns how the batch ended:
// store.BatchDone, store.BatchFailed, or "" while other shards are still running.
func (w *RunBatchShardWorker) endBatch(ctx context.Context, tx pgx.Tx, batchID int64) (store.BatchState, error) {
	end, err := store.BatchEndShards(ctx, tx, batchID)
	switch {
	case err != nil || !end.Ended:
		return "", err
	case !end.Done:
		return store.BatchFailed, nil
	}
	if err := enqueueScore(ctx, tx, w.Inserters[queue.Scorer], batchID, end.StartedAt, w.PeakEvery); err != nil {
		return "", err
	}
	w.Logger.InfoContext(ctx, "sharded batch done", "batch_id", batchID)
	return store.BatchDone, nil
}

// fail finishes a shard as failed with its events, ends the batch if it was the last, and ends
// the River job with the cause, in one transaction on a detached context: cancelled, with an
// event naming who cancelled it (stopperOf, read in that transaction: the API's request or
// River UI's Cancel), when a cancel stopped it, else discarded. It reports whether that
// committed, with how the batch ended (see endBatch); if it did not, the caller cancels the job
// through River.
func (w *RunBatchShardWorker) fail(ctx context.Context, job *river.Job[queue.RunBatchShardArgs], s store.ShardStarted, cause error, res *batch.Result) (store.BatchState, bool) {
	cancelled := queue.CancelledRemotely(ctx)
	ctx, cancel := detached(ctx)
	defer cancel()
	var ended store.BatchState
	var by stopper // River UI's Cancel until the transaction reads an API request's record
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		recorded := cause
		if cancelled {
			var err error
			if by, err = stopperOf(ctx, tx, job.JobRow); err != nil {
				return err
			}
			recorded = fmt.Errorf("%s: %w", by.cancelled(), cause)
		}
		if err := store.ShardFail(ctx, tx, s, recorded, res); err != nil {
			return err
		}
		var err error
		if ended, err = w.endBatch(ctx, tx, s.BatchID); err != nil {
			return err
		}
		if !cancelled {
			return queue.JobFailTx(ctx, tx, job, recorded)
		}
		event := sysevent.One(sysevent.TypeRiverJob, sysevent.JobCancelled,
			fmt.Sprintf("%s stopped run_batch_shard job %d; the shard failed", by.who(s.BatchID), job.ID), by.eventData(job.JobRow))
		if err := store.ShardEventsWrite(ctx, tx, s, []sysevent.Event{event}); err != nil {
			return err
		}
		return queue.JobCancelTx(ctx, tx, job, recorded)
	})
	if err != nil {
		w.Logger.ErrorContext(ctx, "record failed shard", "batch_id", s.BatchID, "shard", s.Shard, "cause", cause, "error", err)
	}
	if cancelled {
		by.log(ctx, w.Logger, job.JobRow, fmt.Sprintf("stopped shard %d of batch %d: failed, job cancelled", s.Shard, s.BatchID),
			"batch_id", s.BatchID, "shard", s.Shard, "recorded", err == nil)
	}
	return ended, err == nil
}
