package probe

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
)

// Timeout bounds a probe or probe_ack job, one short transaction. River's rescuer takes back such
// a job of a process that died within Timeout and its 30 s cadence, provided the service's
// RescueStuckJobsAfter is at most Timeout; a service whose is longer gets it back within its
// RescueStuckJobsAfter and 30 s.
const Timeout = 30 * time.Second

// Beginner starts a transaction: a pool in a service, a test's transaction (a savepoint) in
// tests.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Worker works probe jobs that arrive at this service: it records the arrival, enqueues the
// acknowledgement into the origin's queue and completes the job, all in one transaction. So a
// probe whose arrival is recorded is delivered again only by River UI's Retry, and is not
// answered twice: the job ends cancelled, naming the route that sends a new probe.
type Worker struct {
	river.WorkerDefaults[queue.ProbeArgs]
	Pool      Beginner
	Inserters queue.Inserters
	Self      queue.Service
	Logger    *slog.Logger
}

// Timeout implements river.Worker.
func (w *Worker) Timeout(*river.Job[queue.ProbeArgs]) time.Duration { return Timeout }

// Work records the probe's arrival and answers its origin.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.ProbeArgs]) error {
	var again error
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		at, first, err := recordArrival(ctx, tx, job.Args)
		if err != nil {
			return err
		}
		if !first {
			again = fmt.Errorf("probe %d from %s already arrived at %s and was answered; a retry cannot send it again: use POST /v1/probes to send a new probe",
				job.Args.ProbeID, job.Args.Origin, at.UTC().Format(time.RFC3339Nano))
			return nil // nothing written
		}
		origin, ok := w.Inserters[job.Args.Origin]
		if !ok {
			return river.JobCancel(fmt.Errorf("probe %d from unknown service %q", job.Args.ProbeID, job.Args.Origin))
		}
		ack := queue.ProbeAckArgs{ProbeID: job.Args.ProbeID, Target: w.Self, ArrivedAt: at}
		if _, err := origin.InsertTx(ctx, tx, ack, nil); err != nil {
			return fmt.Errorf("enqueue ack of probe %d: %w", job.Args.ProbeID, err)
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	return endOf(ctx, w.Logger, job.JobRow, again, err)
}

// AckWorker works the acknowledgements of probes this service sent. It completes the probe row
// and the job in one transaction, so an acknowledgement of a probe already acknowledged is
// delivered again only by River UI's Retry: it changes nothing, and the job ends cancelled.
type AckWorker struct {
	river.WorkerDefaults[queue.ProbeAckArgs]
	Pool   Beginner
	Logger *slog.Logger
}

// Timeout implements river.Worker.
func (w *AckWorker) Timeout(*river.Job[queue.ProbeAckArgs]) time.Duration { return Timeout }

// Work completes the probe row.
func (w *AckWorker) Work(ctx context.Context, job *river.Job[queue.ProbeAckArgs]) error {
	var again error
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		acked, err := recordAck(ctx, tx, job.Args)
		if err != nil {
			return err
		}
		if !acked {
			again = fmt.Errorf("probe %d is already acknowledged (or was not sent from here); a retry cannot acknowledge it again: use POST /v1/probes to send a new probe", job.Args.ProbeID)
			return nil // nothing written
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	return endOf(ctx, w.Logger, job.JobRow, again, err)
}

// endOf is what a probe worker returns: a job whose work was already done (again) ends cancelled
// with again; River UI's Retry or Cancel reaching the worker is logged (river_ui_action).
func endOf(ctx context.Context, logger *slog.Logger, job *rivertype.JobRow, again, err error) error {
	switch {
	case err == nil && again != nil:
		logger.InfoContext(ctx, "river_ui_action", "kind", job.Kind, "job_id", job.ID, "action", "retry",
			"did", "nothing run, job cancelled: "+again.Error())
		return river.JobCancel(again)
	case err != nil && queue.CancelledRemotely(ctx):
		logger.InfoContext(ctx, "river_ui_action", "kind", job.Kind, "job_id", job.ID, "action", "cancel",
			"did", "stopped; nothing written, job cancelled")
	}
	return err
}
