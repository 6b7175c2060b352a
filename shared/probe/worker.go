package probe

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"drover.dev/queue"
)

// Worker works probe jobs that arrive at this service: it records the arrival, enqueues the
// acknowledgement into the origin's queue and completes the job, all in one transaction.
type Worker struct {
	river.WorkerDefaults[queue.ProbeArgs]
	Pool      *pgxpool.Pool
	Inserters queue.Inserters
	Self      queue.Service
}

// Work records the probe's arrival and answers its origin.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.ProbeArgs]) error {
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		at, err := recordArrival(ctx, tx, job.Args)
		if err != nil {
			return err
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
}

// AckWorker works the acknowledgements of probes this service sent.
type AckWorker struct {
	river.WorkerDefaults[queue.ProbeAckArgs]
	Pool *pgxpool.Pool
}

// Work completes the probe row.
func (w *AckWorker) Work(ctx context.Context, job *river.Job[queue.ProbeAckArgs]) error {
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if err := recordAck(ctx, tx, job.Args); err != nil {
			return err
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}
