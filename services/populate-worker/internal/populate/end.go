package populate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// Outcome is what one delivery of a make job did with its key.
type Outcome string

// The outcomes of a make job's delivery. Made, InTarget, Error and Cancelled record the key's
// outcome in the jobs table; Skipped and Dropped record nothing of the key's (a run's entry at
// most).
const (
	// OutcomeMade: make ran, its rows were inserted and the key's job finished.
	OutcomeMade Outcome = "made"
	// OutcomeInTarget: the key was already in the target when its make began (a schedule whose
	// snapshot predates a make's commit scheduled it again); its job was settled without make.
	OutcomeInTarget Outcome = "already_in_target"
	// OutcomeError: make failed and the key's job records the error.
	OutcomeError Outcome = "error"
	// OutcomeCancelled: make was cut off by River UI's Cancel and the key's job records the
	// interrupt as an error, as DataJoint records a KeyboardInterrupt.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeSkipped: the key was not the job's to make (made, being made, failed or ignored
	// under another job, cleaned up); End.Note says which and what to do instead.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeDropped: the key's populate run had stopped taking keys; it was dropped from the run
	// without make.
	OutcomeDropped Outcome = "dropped"
)

// End is how a delivery of a make job ended. CompleteFunc receives it inside the transaction
// that records it, so that the River job ends with it; MakeKey and MakeRunKey return it.
type End struct {
	Outcome Outcome
	// Err is make's error for OutcomeError and OutcomeCancelled, as the jobs table records it.
	Err error
	// Note says, for OutcomeSkipped and OutcomeDropped, why the key was not made and what to do
	// instead, naming the API route.
	Note string
	// Settled counts the populate runs' entries of the key that the delivery settled.
	Settled int
	// Revived is true when the key was in error and the delivery, a Retry, made it again.
	Revived bool
}

// String says what the delivery did, for a log line.
func (e End) String() string {
	s := string(e.Outcome)
	if e.Revived {
		s += " (its error cleared and made again)"
	}
	switch {
	case e.Err != nil:
		s += ": " + e.Err.Error()
	case e.Note != "":
		s += ": " + e.Note
	}
	return s
}

// MakeOpts is what the River worker knows of the make job it runs.
type MakeOpts struct {
	// JobID is the River job's id, recorded in the key's run_metadata (river_job_id); zero when
	// no River job asks (benchmarks, tests).
	JobID int64
	// Retried is true when the job had ended before (it carries the output of that end) and is
	// delivered again, which only River UI's Retry does: a key in error is then made again.
	Retried bool
}

// CompleteFunc runs inside the transaction that records a make job's delivery (the key's
// success, error or interrupt, a run's entry, or nothing for a skip) with how it ended: the River
// worker ends its River job there, so that River UI and the jobs table agree once it commits.
type CompleteFunc func(ctx context.Context, tx pgx.Tx, end End) error

func callComplete(ctx context.Context, tx pgx.Tx, complete CompleteFunc, end End) error {
	if complete == nil {
		return nil
	}
	return complete(ctx, tx, end)
}

// skipNote says why the key of hash in table was not this make job's to make, from the key's job
// and the target as they are now, and what to do instead, with the key's job status ("" when it
// has no job any more).
func skipNote(ctx context.Context, db postgres.DBTX, t *Table, hash string, retried bool) (string, Status, error) {
	job, err := JobGet(ctx, db, t.Name, hash)
	if errors.Is(err, problem.ErrNotFound) {
		return noJobNote(t, hash), "", nil
	}
	if err != nil {
		return "", "", err
	}
	return jobNote(t, job, retried), job.Status, nil
}

func jobNote(t *Table, job Job, retried bool) string {
	hash := job.KeyHash
	reschedule := fmt.Sprintf("POST /v1/jobs/%s/%s/reschedule", t.Name, hash)
	switch job.Status {
	case StatusSuccess:
		return madeNote(t)
	case StatusReserved:
		return fmt.Sprintf("key %s of %s is being made by another make job (connection %d); nothing to do", hash, t.Name, job.ConnectionID)
	case StatusIgnore:
		return fmt.Sprintf("key %s of %s is ignored; use %s to make it", hash, t.Name, reschedule)
	case StatusError:
		msg := ""
		if job.ErrorMessage != nil {
			msg = *job.ErrorMessage
		}
		if retried { // a Retry reserves an error key: it was reserved and failed again meanwhile
			return fmt.Sprintf("key %s of %s failed again under another make job (%s); use %s to make it again", hash, t.Name, msg, reschedule)
		}
		return fmt.Sprintf("key %s of %s failed under another make job (%s); use %s, or Retry the job that failed, to make it again", hash, t.Name, msg, reschedule)
	}
	return fmt.Sprintf("key %s of %s was taken by another make job; nothing to do", hash, t.Name)
}

// noJobNote is skipNote for a key with no job: made by another make job (a made key's job is
// deleted unless KEEP_SUCCESS), or cleaned up after it left key_source. Telling the two apart
// would take a scan of key_source for the hash, too dear for a duplicate delivery.
func noJobNote(t *Table, hash string) string {
	return fmt.Sprintf("key %s of %s has no job any more: another make job made it, or it left key_source and was cleaned up; "+
		"nothing to do (to make it again, delete its rows from %s; POST /v1/tables/%s/schedule schedules what is missing)",
		hash, t.Name, t.Target, t.Name)
}

func madeNote(t *Table) string {
	return fmt.Sprintf("key already made in %s; nothing to redo (to make it again, delete its rows from %s, which schedules it; "+
		"POST /v1/tables/%s/schedule schedules what is missing)", t.Name, t.Target, t.Name)
}
