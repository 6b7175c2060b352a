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

// ReportWorker applies a build worker's report: the job's transition and all its consequences
// commit with the report job's completion, so a report is applied exactly once even though River
// may deliver it twice.
type ReportWorker struct {
	river.WorkerDefaults[queue.BuildReportArgs]
	Pool    *pgxpool.Pool
	Graph   *jobgraph.Graph
	Metrics *Metrics
}

// Work applies the report; a stale or repeated report completes without effect.
func (w *ReportWorker) Work(ctx context.Context, job *river.Job[queue.BuildReportArgs]) error {
	res, err := w.Graph.Report(ctx, w.Pool, job.Args, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return err
	}
	w.Metrics.reported(job.Args, res)
	return nil
}
