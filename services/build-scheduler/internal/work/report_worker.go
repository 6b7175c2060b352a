package work

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// ReportWorker applies a report that came through the scheduler's queue as a build_report job:
// the job's transition and all its consequences commit with the report job's completion, so a
// report is applied exactly once even though River may deliver it twice. Build workers apply
// their own reports in the transaction that ends their build_run job (see package buildworker);
// the kind stays for reports still queued by workers of earlier releases and for any producer
// that must report through the queue. A repeated report, or one from a dead attempt, matches no
// job and completes without effect.
type ReportWorker struct {
	river.WorkerDefaults[queue.BuildReportArgs]
	Pool    *pgxpool.Pool
	Graph   *jobgraph.Graph
	Metrics *Metrics
}

// Work applies the report; a stale or repeated report completes without effect.
func (w *ReportWorker) Work(ctx context.Context, job *river.Job[queue.BuildReportArgs]) error {
	res, err := w.Graph.Report(ctx, w.Pool, job.Args, func(tx pgx.Tx, _ jobgraph.Result) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return err
	}
	w.Metrics.reported(job.Args, res)
	return nil
}
