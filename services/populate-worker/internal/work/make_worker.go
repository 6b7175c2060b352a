package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
)

// MakeWorker works populate_make jobs: it reserves the key, runs make and finishes the key's job
// and the River job in one transaction. make's own failures are recorded in the jobs table and
// end the River job as discarded with the same error, so River UI shows an errored make as
// failed; only failures to record anything are returned, for River to retry.
type MakeWorker struct {
	river.WorkerDefaults[queue.PopulateMakeArgs]
	Engine *populate.Engine
	// MakeTimeout bounds one make; River's client-wide job timeout is too short for pipelines.
	MakeTimeout time.Duration
}

// Timeout is the longest a make may run.
func (w *MakeWorker) Timeout(*river.Job[queue.PopulateMakeArgs]) time.Duration { return w.MakeTimeout }

// Work makes one key. An infrastructure error on the job's last attempt ends the job as discarded
// and gives the key back to the feeder in one transaction: River would discard the job on its
// own, and the key, still scheduled and marked enqueued, would have no job to make it.
func (w *MakeWorker) Work(ctx context.Context, job *river.Job[queue.PopulateMakeArgs]) error {
	a := job.Args
	_, err := w.Engine.MakeKey(ctx, a.Table, a.KeyHash, completer(job, a.Table, a.KeyHash))
	err = cancelUnknown(err, a.Table, a.KeyHash)
	if !lastAttemptFailed(job.JobRow, err) {
		return err
	}
	cause := fmt.Errorf("make %s/%s: attempt %d of %d: %w", a.Table, a.KeyHash, job.Attempt, job.MaxAttempts, err)
	end := func(ctx context.Context, tx pgx.Tx) error { return queue.JobFailTx(ctx, tx, job, cause) }
	if ferr := w.Engine.Unfeed(context.WithoutCancel(ctx), a.Table, a.KeyHash, end); ferr != nil {
		return errors.Join(err, ferr)
	}
	return nil
}

// lastAttemptFailed reports whether err ends job's last attempt with an infrastructure error
// (not a cancellation), which River would discard outside any transaction of the key's.
func lastAttemptFailed(job *rivertype.JobRow, err error) bool {
	var cancel *river.JobCancelError
	return err != nil && job.Attempt >= job.MaxAttempts && !errors.As(err, &cancel)
}

// RunMakeWorker works populate_run_make jobs: the make of one key of a populate run, as
// MakeWorker's, after which the run's next key is enqueued in the finishing transaction.
type RunMakeWorker struct {
	river.WorkerDefaults[queue.PopulateRunMakeArgs]
	Engine      *populate.Engine
	MakeTimeout time.Duration
}

// Timeout is the longest a make may run.
func (w *RunMakeWorker) Timeout(*river.Job[queue.PopulateRunMakeArgs]) time.Duration {
	return w.MakeTimeout
}

// Work makes one key of a run. An infrastructure error on the job's last attempt ends the key as
// an error of the run and the job as discarded in one transaction: River would discard the job on
// its own, outside any transaction that settles the key, and the run would wait for it.
func (w *RunMakeWorker) Work(ctx context.Context, job *river.Job[queue.PopulateRunMakeArgs]) error {
	a := job.Args
	_, err := w.Engine.MakeRunKey(ctx, a.RunID, a.Table, a.KeyHash, completer(job, a.Table, a.KeyHash))
	err = cancelUnknown(err, a.Table, a.KeyHash)
	if !lastAttemptFailed(job.JobRow, err) {
		return err
	}
	cause := fmt.Errorf("make %s/%s: attempt %d of %d: %w", a.Table, a.KeyHash, job.Attempt, job.MaxAttempts, err)
	end := func(ctx context.Context, tx pgx.Tx) error { return queue.JobFailTx(ctx, tx, job, cause) }
	if ferr := w.Engine.FailRunKey(context.WithoutCancel(ctx), a.RunID, a.Table, a.KeyHash, job.ID, cause, end); ferr != nil {
		return errors.Join(err, ferr)
	}
	return nil
}

// completer ends job in the transaction that finishes its key: completed, or discarded with
// make's error, so River UI shows an errored make as failed.
func completer[T river.JobArgs](job *river.Job[T], table, hash string) populate.CompleteFunc {
	return func(ctx context.Context, tx pgx.Tx, makeErr error) error {
		if makeErr != nil {
			return queue.JobFailTx(ctx, tx, job, fmt.Errorf("make %s/%s: %w", table, hash, makeErr))
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	}
}

// cancelUnknown turns an unknown table into a cancelled job: no retry can make it.
func cancelUnknown(err error, table, hash string) error {
	if errors.Is(err, problem.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("make %s/%s: %w", table, hash, err))
	}
	return err
}
