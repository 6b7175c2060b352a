package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/shared/postgres"
)

// stopper is who cancelled a running run_batch or run_batch_shard job. River's JobCancel looks
// the same to the worker whether POST /v1/batches/{id}/cancel or River UI's Cancel called it (the
// job's context is cancelled with river.ErrJobCancelledRemotely), so the API records its request
// (store.CancelCreate) in the transaction that cancels the job, and the worker reads it back: a
// record for the job's attempt names the API request, none means River UI.
type stopper struct {
	// request is the id of the API request that cancelled the job; "" for River UI's Cancel.
	request string
}

// stopperOf reads who cancelled the running attempt of job, in db (the transaction that records
// the failure, so what it says and what the batch says agree).
func stopperOf(ctx context.Context, db postgres.DBTX, job *rivertype.JobRow) (stopper, error) {
	id, err := store.CancelRequestGet(ctx, db, job.ID, job.Attempt)
	if errors.Is(err, store.ErrNotFound) {
		return stopper{}, nil
	}
	return stopper{request: id}, err
}

// stopperLogged is stopperOf on a context of its own, for a job stopped before it wrote anything,
// whose cancellation is only logged: a record that cannot be read is logged with the error, and
// the cancellation taken for River UI's.
func stopperLogged(ctx context.Context, db postgres.DBTX, logger *slog.Logger, job *rivertype.JobRow) stopper {
	ctx, cancel := detached(ctx)
	defer cancel()
	by, err := stopperOf(ctx, db, job)
	if err != nil {
		logger.WarnContext(ctx, "read who cancelled the job", "kind", job.Kind, "job_id", job.ID, "error", err)
	}
	return by
}

// byAPI tells whether an API request cancelled the job.
func (s stopper) byAPI() bool { return s.request != "" }

// cancelled starts the error of a batch or shard stopped while it ran: who cancelled it.
func (s stopper) cancelled() string {
	if s.byAPI() {
		return fmt.Sprintf("cancelled through the API (request %s) while running", s.request)
	}
	return queue.CancelledInUI
}

// who names the caller that stopped a job of batch batchID, for its JOB_CANCELLED event.
func (s stopper) who(batchID int64) string {
	if s.byAPI() {
		return fmt.Sprintf("POST /v1/batches/%d/cancel (request %s)", batchID, s.request)
	}
	return "River UI's Cancel"
}

// eventData is the data of the JOB_CANCELLED event on job: the job, its attempt and, when the API
// cancelled it, the request.
func (s stopper) eventData(job *rivertype.JobRow) map[string]any {
	data := map[string]any{"river_job_id": job.ID, "job_attempt": job.Attempt}
	if s.byAPI() {
		data["request_id"] = s.request
	}
	return data
}

// log logs what the worker did about the cancellation: the river_ui_action line of a River UI
// button press, or, for the API's cancel, a line naming the request (the API logged the request
// itself when it answered).
func (s stopper) log(ctx context.Context, logger *slog.Logger, job *rivertype.JobRow, did string, attrs ...any) {
	if !s.byAPI() {
		queue.LogUIAction(ctx, logger, job, queue.UIActionCancel, did, attrs...)
		return
	}
	logger.InfoContext(ctx, "cancelled through the API",
		append([]any{"kind", job.Kind, "job_id", job.ID, "request_id", s.request, "did", did}, attrs...)...)
}
