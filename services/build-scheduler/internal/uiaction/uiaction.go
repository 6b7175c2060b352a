// Package uiaction recognises, from inside a worker of this service, that River UI's Retry
// delivered the job being worked again (Retried), and reads what the job recorded when it last
// ended (Output). River UI's buttons are River's own calls: Retry is JobRetry (a finished job
// becomes available again, its attempt count, errors and metadata kept), Cancel is JobCancel (a
// running job's context is cancelled with river.ErrJobCancelledRemotely, which
// queue.CancelledRemotely recognises). A press that ends a job before any worker sees it (Cancel
// or Delete on a waiting job) never reaches a worker. Workers log each press they act on with
// queue.LogUIAction, the line every service writes.
package uiaction

import (
	"bytes"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// Output returns what job recorded as its output when it last ended, nil if nothing.
func Output(job *rivertype.JobRow) []byte {
	out := job.Output()
	if len(out) == 0 || bytes.Equal(out, []byte("null")) {
		return nil
	}
	return out
}

// insertSkew is more than the clocks that set a job's scheduled_at and created_at can disagree by
// when River inserts it (a periodic job's comes from the inserting process's clock), and less
// than a person takes to find a job in River UI and press Retry.
const insertSkew = time.Second

// Retried reports whether River UI's Retry (JobRetry) delivered job again after it had finished,
// as far as the job row shows it:
//
//   - It recorded an output. The workers of this service record one only in the transaction that
//     ends the job (and clear it when that transaction fails, or when they stop for a shutdown),
//     so a job that has one had ended, and only JobRetry makes an ended job available again.
//   - Or it was never fetched before and never failed, yet became available well after River
//     inserted it: a job cancelled before it ran, then retried. JobRetry sets scheduled_at to the
//     moment of the press, while River inserts a job that is not scheduled for later with
//     scheduled_at at its created_at (a periodic job's at its planned time, no later), and this
//     service schedules none for later. A job a client's shutdown interrupted also comes back
//     with a later scheduled_at and its attempt given back, but River's fetch recorded the
//     interrupted client in attempted_by.
//
// A job that errored and was then retried by hand looks like any retried error, and is not
// recognised.
func Retried(job *rivertype.JobRow) bool {
	if Output(job) != nil {
		return true
	}
	return job.Attempt <= 1 && len(job.AttemptedBy) <= 1 && len(job.Errors) == 0 &&
		job.ScheduledAt.After(job.CreatedAt.Add(insertSkew))
}
