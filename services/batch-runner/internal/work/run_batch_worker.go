// Package work holds batch-runner's River workers.
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

// RunBatchWorker works run_batch: phase 1 (read miners, pregenerate, create the batch row),
// phase 2 (batch.Run, which has no database handle), phase 3 (one transaction with the results,
// the score_batch job for scorer and the completion of this job).
//
// Running it twice is harmless: the batch row is keyed by the River job id, a retried job takes
// over its own row, and results are written only by the transaction that flips the row from
// running to done, so a batch is never scored twice. The job ends in the transaction that records
// its batch's outcome, so a job delivered again after its batch ended was retried in River UI:
// a done (or sharded) batch is not run again and the job ends cancelled saying so, a batch that
// failed for good is run again (docs/river-ui-actions.md).
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
	// Lease is how long a batch stays this attempt's without a renewal (see keepLease); a
	// Sweeper hands a batch whose lease ran out to a new run_batch job.
	Lease time.Duration
}

// Timeout implements river.Worker: a batch lasts minutes (the 4-minute spin-up alone). A batch
// whose process died is taken over once its lease runs out (Sweeper), long before River's rescuer
// takes its job back after JobTimeout; that job then finds its batch taken over and runs nothing.
func (w *RunBatchWorker) Timeout(*river.Job[queue.RunBatchArgs]) time.Duration { return w.JobTimeout }

// Work implements river.Worker.
func (w *RunBatchWorker) Work(ctx context.Context, job *river.Job[queue.RunBatchArgs]) error {
	begun := time.Now()
	if w.ShardMiners > 0 && job.Args.TakeOver == nil {
		if sharded, err := w.coordinate(ctx, job); sharded {
			return err
		}
	}
	attempt, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	started, plan, err := w.prepare(attempt, job, lost)
	defer plan.StopLease()
	defer w.Progress.Done(plan.Progress)
	switch {
	case errors.Is(err, store.ErrTakenOver):
		return takenOverEnd(ctx, w.Pool, w.Logger, job, started.ID, started.JobID, err)
	case err != nil && started.ID != 0 && leaseLost(attempt, err):
		plan.StopLease()
		return lostLeaseEnd(w.Logger, job.JobRow, fmt.Sprintf("batch %d attempt %d", started.ID, started.Attempt), err)
	case errors.Is(err, store.ErrAlreadyDone):
		return w.refuseRetry(ctx, job, started, err)
	case errors.Is(err, store.ErrConflict):
		return river.JobSnooze(w.BusySnooze)
	case err != nil && started.ID == 0:
		return w.stopped(ctx, job, err)
	case err != nil:
		plan.StopLease()
		return w.failed(ctx, job, started, err, nil)
	}
	res, err := runPhase2(attempt, w.Batch, plan.Plan)
	plan.StopLease()
	plan.Progress.SetPhase(batch.PhaseWrite)
	res.Events = append(res.Events, plan.Events.Drain()...)
	w.Metrics.ran(ctx, w.Logger, started.ID, res)
	if err == nil && !leaseLost(attempt, nil) {
		err = w.finish(ctx, job, started, res)
	}
	if leaseLost(attempt, err) {
		return lostLeaseEnd(w.Logger, job.JobRow, fmt.Sprintf("batch %d attempt %d", started.ID, started.Attempt), err)
	}
	if err != nil {
		return w.failed(ctx, job, started, err, res)
	}
	w.Metrics.ended(store.BatchDone)
	w.Logger.InfoContext(ctx, "batch done", "batch_id", started.ID, "attempt", job.Attempt, "jobs", len(res.Jobs),
		"send_spread", res.SendSpread, "duration", time.Since(begun))
	return nil
}

// failed records a failed attempt at batch s and tells River what is left to do: nothing when
// fail ended the job with the batch, else retry it.
func (w *RunBatchWorker) failed(ctx context.Context, job *river.Job[queue.RunBatchArgs], s store.Started, cause error, res *batch.Result) error {
	w.Metrics.ended(store.BatchFailed)
	w.Logger.WarnContext(ctx, "batch failed", "batch_id", s.ID, "attempt", job.Attempt, "max_attempts", job.MaxAttempts, "error", cause)
	if w.fail(ctx, job, s, cause, res) {
		return nil // the River job ended with the batch, discarded or cancelled
	}
	return fmt.Errorf("batch %d: %w", s.ID, cause)
}

// stopped returns err of a job stopped before it wrote anything of a batch; a cancel stopping it
// so is logged (stopper.log), and River ends the job cancelled.
func (w *RunBatchWorker) stopped(ctx context.Context, job *river.Job[queue.RunBatchArgs], err error) error {
	if queue.CancelledRemotely(ctx) {
		stopperLogged(ctx, w.Pool, w.Logger, job.JobRow).log(ctx, w.Logger, job.JobRow, "stopped before a batch was written; job cancelled", "error", err)
	}
	return err
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

// leasedPlan is a batch's plan with the renewal of its lease, which StopLease ends (and waits
// for); it is safe to call more than once.
type leasedPlan struct {
	batch.Plan
	StopLease func()
}

// prepare is phase 1. Once the batch row is this attempt's, its lease is kept (keepLease) until
// StopLease; losing it cancels ctx through lost.
func (w *RunBatchWorker) prepare(ctx context.Context, job *river.Job[queue.RunBatchArgs], lost context.CancelCauseFunc) (store.Started, leasedPlan, error) {
	var started store.Started
	plan := leasedPlan{StopLease: func() {}}
	leased := time.Now()
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		var err error
		started, err = w.start(ctx, tx, job)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrAlreadyDone) && !errors.Is(err, store.ErrTakenOver) {
		started = store.Started{} // rolled back: no batch row of this attempt
	}
	if err != nil {
		return started, plan, err
	}
	quiet := new(atomic.Bool)
	plan.StopLease = sync.OnceFunc(keepLease(w.Lease, leased, quiet, func(ctx context.Context) error {
		return store.BatchLeaseRenew(ctx, w.Pool, started, w.Lease)
	}, lost, w.Logger.With("batch_id", started.ID, "attempt", started.Attempt, "job_id", job.ID)))
	w.noteRetried(ctx, job, started)
	plan.Plan = batch.Plan{
		Quiet:   quiet.Store,
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

// start creates the batch of job in tx, or takes it over (store.BatchStart), and names it as the
// job's output, so River UI shows which batch a running run_batch job runs. When River UI's Retry
// brought back a job whose batch failed for good, an event on the batch says that it runs again.
func (w *RunBatchWorker) start(ctx context.Context, tx pgx.Tx, job *river.Job[queue.RunBatchArgs]) (store.Started, error) {
	var started store.Started
	var err error
	if job.Args.TakeOver != nil {
		started, err = store.BatchTakeOverStart(ctx, tx, job.Args.TakeOver.BatchID, job.ID, w.Lease)
	} else {
		started, err = store.BatchStart(ctx, tx, job.ID, job.Args.Reason, w.JobTimeout, w.Lease)
	}
	if err != nil {
		return started, err
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return started, fmt.Errorf("name batch %d on run_batch job %d: %w", started.ID, job.ID, err)
	}
	if _, err := client.JobUpdateTx(ctx, tx, job.ID, &river.JobUpdateParams{Output: batchOutput(started.ID)}); err != nil {
		return started, fmt.Errorf("name batch %d on run_batch job %d: %w", started.ID, job.ID, err)
	}
	if !started.Retried {
		return started, nil
	}
	return started, store.EventsWrite(ctx, tx, started, []sysevent.Event{sysevent.One(sysevent.TypeRiverJob, sysevent.JobRetried,
		fmt.Sprintf("River UI's Retry runs the failed batch again: attempt %d, run_batch job %d", started.Attempt, job.ID),
		map[string]any{"river_job_id": job.ID, "job_attempt": job.Attempt})})
}

// noteRetried logs a batch that runs again because River UI's Retry brought its job back.
func (w *RunBatchWorker) noteRetried(ctx context.Context, job *river.Job[queue.RunBatchArgs], s store.Started) {
	if s.Retried {
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, fmt.Sprintf("runs failed batch %d again (attempt %d)", s.ID, s.Attempt), "batch_id", s.ID)
	}
}

// refuseRetry ends a job delivered again after its batch ended for good (done, or handed to its
// shards), which only River UI's Retry does: running that batch again under the same job cannot
// mean anything. The job ends cancelled with an error naming the route that runs a new batch, and
// an event on the batch says so, in one transaction.
func (w *RunBatchWorker) refuseRetry(ctx context.Context, job *river.Job[queue.RunBatchArgs], s store.Started, ended error) error {
	cause := fmt.Errorf("%w; a retry cannot run it again: use POST /v1/batches to run a new batch", ended)
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		event := sysevent.One(sysevent.TypeRiverJob, sysevent.RetryRefused,
			fmt.Sprintf("River UI's Retry on run_batch job %d refused: %v", job.ID, ended),
			map[string]any{"river_job_id": job.ID, "job_attempt": job.Attempt})
		if err := store.EventsWrite(ctx, tx, s, []sysevent.Event{event}); err != nil {
			return err
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCancelled, Err: cause, Output: batchOutput(s.ID)})
	})
	if err != nil {
		return fmt.Errorf("refuse retry of run_batch job %d: %w", job.ID, err)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, "nothing run, job cancelled: "+ended.Error(), "batch_id", s.ID)
	return nil
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

// completeJob completes job in tx, atomic with what the worker wrote there, with the batch it ran
// as its output for River UI readers.
func completeJob[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T], batchID int64) error {
	return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCompleted, Output: batchOutput(batchID)})
}

// batchOutput is the output of a run_batch or run_batch_shard job: the batch it ran, where
// River UI shows a job's output (the metadata's "output" key).
func batchOutput(batchID int64) map[string]any { return map[string]any{"batch_id": batchID} }

// detached is a context for recording a failure: it outlives ctx's cancellation (shutdown, River
// UI's Cancel), since losing the events of a batch that broke is what the design forbids, but not
// by long.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// batchEnd is how fail ends the River job along with a failed attempt at its batch: not at all
// (state ""), or with state, the job's error and an event on the batch.
type batchEnd struct {
	state    rivertype.JobState
	batchErr error // what the batch row says
	jobErr   error
	event    sysevent.Event
}

// endOf decides batchEnd: cancelled when a cancel (by, the API's or River UI's) stopped the
// attempt, discarded when the attempt was the job's last, else left to River. An attempt stopped
// by shutdown is never the last.
func endOf(ctx context.Context, job *river.Job[queue.RunBatchArgs], s store.Started, cause error, by stopper) batchEnd {
	switch {
	case queue.CancelledRemotely(ctx):
		cause = fmt.Errorf("%s: %w", by.cancelled(), cause)
		return batchEnd{
			state: rivertype.JobStateCancelled, batchErr: cause, jobErr: fmt.Errorf("batch %d %w", s.ID, cause),
			event: sysevent.One(sysevent.TypeRiverJob, sysevent.JobCancelled,
				fmt.Sprintf("%s stopped run_batch job %d; the batch failed", by.who(s.ID), job.ID), by.eventData(job.JobRow)),
		}
	case job.Attempt >= job.MaxAttempts && !errors.Is(ctx.Err(), context.Canceled):
		return batchEnd{
			state: rivertype.JobStateDiscarded, batchErr: cause,
			jobErr: fmt.Errorf("batch %d failed on attempt %d of %d: %w", s.ID, job.Attempt, job.MaxAttempts, cause),
			event: sysevent.One(sysevent.TypeRiverJob, sysevent.JobDiscarded,
				fmt.Sprintf("run_batch job %d failed on its last attempt (%d of %d)", job.ID, job.Attempt, job.MaxAttempts),
				map[string]any{"river_job_id": job.ID, "job_attempt": job.Attempt}),
		}
	}
	return batchEnd{batchErr: cause}
}

// fail records a failed attempt with its events, on a detached context. When the attempt was
// cancelled (through the API or in River UI), or was the job's last, it also ends the River job
// (endOf), in the same transaction, so River UI shows the run_batch job ended exactly when the
// batch has failed for good; an earlier attempt is left to River, which records the error and
// retries. Who cancelled is read in that transaction too (stopperOf). fail reports whether it
// ended the River job.
func (w *RunBatchWorker) fail(ctx context.Context, job *river.Job[queue.RunBatchArgs], s store.Started, cause error, res *batch.Result) bool {
	jobCtx := ctx
	ctx, cancel := detached(ctx)
	defer cancel()
	var by stopper // River UI's Cancel until the transaction reads an API request's record
	end := endOf(jobCtx, job, s, cause, by)
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if end.state == rivertype.JobStateCancelled {
			var err error
			if by, err = stopperOf(ctx, tx, job.JobRow); err != nil {
				return err
			}
			end = endOf(jobCtx, job, s, cause, by)
		}
		if err := store.BatchFail(ctx, tx, s, end.batchErr, res); err != nil || end.state == "" {
			return err
		}
		if err := store.EventsWrite(ctx, tx, s, []sysevent.Event{end.event}); err != nil {
			return err
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: end.state, Output: batchOutput(s.ID), Err: end.jobErr})
	})
	if err != nil {
		w.Logger.ErrorContext(ctx, "record failed batch", "batch_id", s.ID, "cause", cause, "error", err)
	}
	if end.state == rivertype.JobStateCancelled {
		did := fmt.Sprintf("stopped batch %d: failed, job cancelled", s.ID)
		if err != nil {
			did = fmt.Sprintf("stopped batch %d; recording it failed (%v), River cancels the job", s.ID, err)
		}
		by.log(ctx, w.Logger, job.JobRow, did, "batch_id", s.ID)
	}
	return end.state != "" && err == nil
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
