package work

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/uiaction"
)

// ReportWorker applies a report that came through the scheduler's queue as a build_report job:
// the job's transition and all its consequences commit with the report job's end, so a report is
// applied exactly once even though River may deliver it twice. Build workers apply their own
// reports in the transaction that ends their build_run job (see package buildworker); the kind
// stays for reports still queued by workers of earlier releases and for any producer that must
// report through the queue.
//
// A report that applies completes. One that changes nothing (a repeat, or an attempt that lost
// its lease) ends cancelled saying so: River shows a report completed only when it was applied.
// Since the end commits with the report, only River UI's Retry delivers an ended report again,
// and it changes nothing then: the job graph records the press.
type ReportWorker struct {
	river.WorkerDefaults[queue.BuildReportArgs]
	Pool    *pgxpool.Pool
	Graph   *jobgraph.Graph
	Metrics *Metrics
	Logger  *slog.Logger // nil: slog.Default()
}

// reportOutput is what a report job records as its output.
type reportOutput struct {
	Applied    bool                `json:"applied"`
	JobState   jobgraph.JobState   `json:"job_state,omitempty"`
	GroupState jobgraph.GroupState `json:"group_state,omitempty"`
}

// Timeout bounds a report: one transaction (see jobgraph.StepTimeout).
func (w *ReportWorker) Timeout(*river.Job[queue.BuildReportArgs]) time.Duration {
	return jobgraph.StepTimeout
}

// NextRetry retries a report that errored, or that River's rescuer took back, after as many
// seconds as its attempt instead of River's attempt^4: the job it reports holds its worker's
// lease, which nobody renews any more, until it is applied.
func (w *ReportWorker) NextRetry(job *river.Job[queue.BuildReportArgs]) time.Time {
	return time.Now().Add(time.Duration(job.Attempt) * time.Second)
}

// Work applies the report and ends the job in the same transaction.
func (w *ReportWorker) Work(ctx context.Context, job *river.Job[queue.BuildReportArgs]) error {
	r := job.Args
	retried := uiaction.Retried(job.JobRow)
	var did string
	res, err := w.Graph.Report(ctx, w.Pool, r, func(tx pgx.Tx, res jobgraph.Result) error {
		end := queue.JobEnd{State: rivertype.JobStateCompleted, Output: reportOutput{Applied: res.Applied, JobState: res.State, GroupState: res.GroupState}}
		group := res.GroupID
		did = fmt.Sprintf("applied the report of job %d attempt %d: job %s", r.JobID, r.Attempt, res.State)
		if !res.Applied {
			group = groupOf(ctx, tx, r.JobID)
			end.State = rivertype.JobStateCancelled
			end.Err = fmt.Errorf("the report of job %d attempt %d changed nothing: it was applied already, or that attempt no longer holds the job (its lease ran out, or its group settled); to run the job again use POST /v1/groups/%d/retry",
				r.JobID, r.Attempt, group)
			did = end.Err.Error()
		}
		if retried {
			if err := jobgraph.RecordAction(ctx, tx, idOrNil(group), &r.JobID, "River UI retry of build_report %d: %s", job.ID, did); err != nil {
				return err
			}
		}
		return queue.JobEndTx(ctx, tx, job, end)
	})
	switch {
	case err != nil && queue.CancelledRemotely(ctx):
		return stopped(ctx, w.Pool, w.Logger, job, r.JobID, fmt.Sprintf(
			"the report of job %d attempt %d was not applied; the attempt's lease runs out and the reaper hands the job to another attempt", r.JobID, r.Attempt))
	case err != nil:
		_ = river.RecordOutput(ctx, nil) // a retried report must not carry the output of an end that rolled back
		return err
	}
	if retried {
		queue.LogUIAction(ctx, orDefault(w.Logger), job.JobRow, queue.UIActionRetry, did, "build_job_id", r.JobID)
	}
	w.Metrics.reported(r, res)
	return nil
}
