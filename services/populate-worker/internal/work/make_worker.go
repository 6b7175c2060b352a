package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
)

// recordGrace is how much longer than MAKE_TIMEOUT a make job's River timeout is: a make cut off
// at MAKE_TIMEOUT records its TimeoutError within populate's record timeout (10 s), and River's
// rescuer, which takes back a running job once its timeout has passed, must not take it first.
const recordGrace = 15 * time.Second

// busySnooze is how long a run's make whose key was reclaimed under it waits before it tries again.
const busySnooze = time.Second

// MakeWorker works populate_make jobs, the background's and the populate runs': it reserves the
// key, runs make and finishes the key's job and the River job in one transaction. make's own
// failures are recorded in the jobs table and end the River job as discarded with the same
// error, so River UI shows an errored make as failed; only failures to record anything are
// returned, for River to retry. River UI's buttons:
// Retry of a failed make makes its key again; Cancel of a running make interrupts it and records
// the key's error as KeyboardInterrupt, in the transaction that ends the job cancelled; a job
// whose key is not its to make ends cancelled saying why, never completed.
type MakeWorker struct {
	river.WorkerDefaults[queue.PopulateMakeArgs]
	Engine *populate.Engine
	Log    *ActionLog
	// MakeTimeout bounds one make; River's client-wide job timeout is too short for pipelines.
	MakeTimeout time.Duration
}

// Timeout is the longest a make job may run: MakeTimeout, and recordGrace to record a make cut
// off by it.
func (w *MakeWorker) Timeout(*river.Job[queue.PopulateMakeArgs]) time.Duration {
	return w.MakeTimeout + recordGrace
}

// Work makes one key, for the populate run that asked (its args' run id) or the background. An
// infrastructure error on the job's last attempt ends the job as discarded, gives the key back to
// the feeder and counts it an error of the run that asked, in one transaction: River would
// discard the job on its own, and the key, still scheduled and marked enqueued, would have no job
// to make it, and the run would wait for it.
func (w *MakeWorker) Work(ctx context.Context, job *river.Job[queue.PopulateMakeArgs]) error {
	a := job.Args
	by := populate.AskerOf(a)
	opts := makeOpts(job.JobRow)
	makeCtx, cancel := context.WithTimeout(ctx, w.MakeTimeout)
	defer cancel()
	end, err := w.Engine.MakeKey(makeCtx, by, a.Table, a.KeyHash, opts, ender(job, a.Table, a.KeyHash))
	if errors.Is(err, populate.ErrKeyBusy) {
		// The key was given back to scheduled under this job (reclaimed): it tries again.
		return river.JobSnooze(busySnooze)
	}
	err = cancelUnknown(err, a.Table, a.KeyHash)
	if lastAttemptFailed(job.JobRow, err) {
		cause := fmt.Errorf("make %s/%s: attempt %d of %d: %w", a.Table, a.KeyHash, job.Attempt, job.MaxAttempts, err)
		note := "the key was given back to the feeder"
		if run, ok := by.Run(); ok {
			note += fmt.Sprintf("; counted an error of populate run %d", run)
		}
		out := makeOutput{Outcome: "failed", Table: a.Table, KeyHash: a.KeyHash, Error: cause.Error(), Note: note}
		endTx := func(ctx context.Context, tx pgx.Tx) error {
			return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateDiscarded, Err: cause, Output: out})
		}
		if ferr := w.Engine.GiveUp(context.WithoutCancel(ctx), by, a.Table, a.KeyHash, job.ID, cause, endTx); ferr != nil {
			err = errors.Join(err, ferr)
		} else {
			err = nil
			end = populate.End{Outcome: populate.OutcomeSkipped, Note: out.Note + " after: " + cause.Error()}
		}
	}
	w.Log.made(ctx, job.JobRow, opts, end, err)
	return err
}

// lastAttemptFailed reports whether err ends job's last attempt with an infrastructure error
// (not a cancellation), which River would discard outside any transaction of the key's.
func lastAttemptFailed(job *rivertype.JobRow, err error) bool {
	var cancel *river.JobCancelError
	return err != nil && job.Attempt >= job.MaxAttempts && !errors.As(err, &cancel)
}

// makeOpts is what the engine needs to know of a make job.
func makeOpts(job *rivertype.JobRow) populate.MakeOpts {
	return populate.MakeOpts{JobID: job.ID, Retried: retried(job)}
}

// makeOutput is a make job's output, as River UI shows it: what became of its key.
type makeOutput struct {
	Outcome string `json:"outcome"`
	Table   string `json:"table"`
	KeyHash string `json:"key_hash"`
	// Error is make's error, as the key's job records it, or the job's own.
	Error string `json:"error,omitempty"`
	// Note says why the key was not made, and what to do instead.
	Note string `json:"note,omitempty"`
	// Revived is true when the key was in error and this job, retried, made it again.
	Revived bool `json:"revived_from_error,omitempty"`
	// RunEntries counts the populate runs' entries of the key the job settled.
	RunEntries int `json:"run_entries_settled,omitempty"`
}

// ender ends job in the transaction that records its delivery, as end says: completed when it
// made the key, settled its job or run entry, or handed the key to the populate run that makes
// it or counts it (yielded_to_run, waiting_for_other_make); discarded with make's error; cancelled when River
// UI's Cancel cut its make off, or when it had nothing to do (a job that made nothing never ends
// completed). The output it records says what became of the key.
func ender(job *river.Job[queue.PopulateMakeArgs], table, hash string) populate.CompleteFunc {
	return func(ctx context.Context, tx pgx.Tx, end populate.End) error {
		out := makeOutput{Outcome: string(end.Outcome), Table: table, KeyHash: hash, Note: end.Note, Revived: end.Revived, RunEntries: end.Settled}
		state, cause := rivertype.JobStateCompleted, error(nil)
		switch end.Outcome {
		case populate.OutcomeMade, populate.OutcomeInTarget, populate.OutcomeYielded, populate.OutcomeWaiting:
		case populate.OutcomeError:
			state, cause = rivertype.JobStateDiscarded, fmt.Errorf("make %s/%s: %w", table, hash, end.Err)
		case populate.OutcomeCancelled:
			state, cause = rivertype.JobStateCancelled, fmt.Errorf("make %s/%s: %w", table, hash, end.Err)
		default: // skipped or dropped: completed only when it settled a run's entry of the key
			if end.Settled == 0 {
				state, cause = rivertype.JobStateCancelled, fmt.Errorf("make %s/%s: %s", table, hash, end.Note)
			}
		}
		if cause != nil {
			out.Error = cause.Error()
		}
		// River's JobSetStateIfRunningMany, which ends the job, is planned anew at every call
		// (Postgres keeps choosing a custom plan for it), and that planning was the costliest
		// part of a key's finishing transaction. The end is the transaction's last statement, so
		// the setting holds for it alone: a generic plan, made once per connection.
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return fmt.Errorf("end make job %d: %w", job.ID, err)
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: state, Err: cause, Output: out})
	}
}

// cancelUnknown turns an unknown table into a cancelled job: no retry can make it.
func cancelUnknown(err error, table, hash string) error {
	if errors.Is(err, problem.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("make %s/%s: %w", table, hash, err))
	}
	return err
}
