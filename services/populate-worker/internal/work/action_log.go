package work

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
)

// ActionLog logs the River UI button presses that reach a worker: one info line per press, msg
// river_ui_action, with the job's kind and id, the action (retry or cancel) and what the worker
// did about it. Retry is a delivery of a job that had ended before (it carries the output that
// end recorded); Cancel is a job whose context River cancelled with ErrJobCancelledRemotely.
type ActionLog struct {
	Logger *slog.Logger
}

// log writes the line of one press with queue.LogUIAction, so that it is the line every service
// writes. A nil ActionLog, or one without a logger, logs nothing: a worker needs no logger to work.
func (l *ActionLog) log(ctx context.Context, job *rivertype.JobRow, action, did string) {
	if l == nil || l.Logger == nil {
		return
	}
	queue.LogUIAction(ctx, l.Logger, job, action, did)
}

// made logs the presses behind one delivery of a make job, which ended as end, or failed with
// err to be retried by River.
func (l *ActionLog) made(ctx context.Context, job *rivertype.JobRow, opts populate.MakeOpts, end populate.End, err error) {
	did := end.String()
	if err != nil {
		did = "failed, for River to retry: " + err.Error()
	}
	if opts.Retried {
		l.log(ctx, job, queue.UIActionRetry, did)
	}
	if queue.CancelledRemotely(ctx) {
		if end.Outcome != populate.OutcomeCancelled {
			did = "nothing to cancel, the make had ended: " + did
		}
		l.log(ctx, job, queue.UIActionCancel, did)
	}
}

// ran logs the presses behind one delivery of a maintenance job (schedule, cleanup, feed) that
// did did, or failed with err.
func (l *ActionLog) ran(ctx context.Context, job *rivertype.JobRow, did string, err error) {
	if err != nil {
		did = "failed: " + err.Error()
	}
	if retried(job) {
		l.log(ctx, job, queue.UIActionRetry, did)
	}
	if queue.CancelledRemotely(ctx) {
		if err != nil {
			did = "stopped, its transaction rolled back: " + err.Error()
		}
		l.log(ctx, job, queue.UIActionCancel, did)
	}
}

// retried reports whether job had ended before this delivery: every worker here records an output
// when it ends a job, and River delivers an ended job again only through JobRetry, River UI's
// Retry. (River's own retries and rescues are of jobs that never ended.)
func retried(job *rivertype.JobRow) bool {
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(job.Metadata, &meta); err != nil {
		return false
	}
	_, ok := meta[rivertype.MetadataKeyOutput]
	return ok
}

// jsonText is v as JSON, for a log line.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
