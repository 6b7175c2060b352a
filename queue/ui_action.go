package queue

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Actions a River UI button takes on a job that reach a worker (docs/river-ui-actions.md).
const (
	UIActionRetry  = "retry"
	UIActionCancel = "cancel"
)

// CancelledInUI starts the error a worker records on a job that River UI's Cancel stopped.
const CancelledInUI = "cancelled from River UI while running"

// LogUIAction logs the one line a River UI button press that reached a worker leaves: which job,
// which button, and what the worker did about it.
func LogUIAction(ctx context.Context, logger *slog.Logger, job *rivertype.JobRow, action, did string, attrs ...any) {
	logger.InfoContext(ctx, "river_ui_action",
		append([]any{"kind", job.Kind, "job_id", job.ID, "action", action, "did", did}, attrs...)...)
}

// CancelledRemotely tells whether ctx, a job's context, was cancelled by JobCancel on the running
// job, which is what River UI's Cancel calls.
func CancelledRemotely(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely)
}

// RetriedInUI tells, for a kind whose own tables do not say, whether River UI's Retry (JobRetry)
// brought job back after it had ended: completed, or cancelled while running. River records an
// error for every attempt it retries by itself (an error returned, a panic, a rescue) and none
// for a completed one, so an attempt count past the errors means one attempt completed; a
// cancellation's error is the job's last.
func RetriedInUI(job *rivertype.JobRow) bool {
	n := len(job.Errors)
	if job.Attempt-1 > n {
		return true
	}
	if n == 0 {
		return false
	}
	last := job.Errors[n-1].Error
	return strings.HasPrefix(last, CancelledInUI) || last == river.ErrJobCancelledRemotely.Error()
}
