package work

import (
	"context"
	"errors"
	"log/slog"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Actions a River UI button takes on a job that reach a worker (docs/river-ui-actions.md).
const (
	actionRetry  = "retry"
	actionCancel = "cancel"
)

// logUIAction logs the one line a River UI button press that reached a worker leaves: which job,
// which button, and what the worker did about it.
func logUIAction(ctx context.Context, logger *slog.Logger, job *rivertype.JobRow, action, did string, attrs ...any) {
	logger.InfoContext(ctx, "river_ui_action",
		append([]any{"kind", job.Kind, "job_id", job.ID, "action", action, "did", did}, attrs...)...)
}

// cancelledRemotely tells whether ctx, a job's context, was cancelled by JobCancel on the running
// job, which is what River UI's Cancel calls.
func cancelledRemotely(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely)
}
