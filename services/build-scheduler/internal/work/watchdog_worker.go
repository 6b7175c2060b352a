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

// WatchdogArgs starts one watchdog pass. It is enqueued periodically by River's leader.
type WatchdogArgs struct{}

// Kind is the job kind of WatchdogArgs.
func (WatchdogArgs) Kind() string { return "build_watchdog" }

// InsertOpts pins the watchdog to the scheduler's queue. A pass that finds the queue already
// holding one is skipped: passes are idempotent and a backlog of them helps nobody.
func (WatchdogArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.QueueBuildScheduler, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: queue.UnfinishedStates()}}
}

// WatchdogWorker runs watchdog passes. Completion is decided by every transition in its own
// transaction; the watchdog re-checks it so a lost message cannot leave a group open forever.
// River UI's Retry of a pass runs another one at once.
type WatchdogWorker struct {
	river.WorkerDefaults[WatchdogArgs]
	Pool       *pgxpool.Pool
	Graph      *jobgraph.Graph
	StallAfter time.Duration
	Metrics    *Metrics
	Logger     *slog.Logger // nil: slog.Default()
}

// watchOutput is what a pass records as its output.
type watchOutput struct {
	Watched  int     `json:"watched_groups"`
	Canceled []int64 `json:"cancelled_groups"`
	Settled  []int64 `json:"settled_groups"`
	Drifted  int     `json:"drifted_groups"`
}

func (o watchOutput) String() string {
	return fmt.Sprintf("a watchdog pass over %d open groups: %d stalled groups cancelled %v, %d groups settled %v, %d groups with counter drift",
		o.Watched, len(o.Canceled), o.Canceled, len(o.Settled), o.Settled, o.Drifted)
}

// Timeout bounds a pass: one transaction (see jobgraph.StepTimeout).
func (w *WatchdogWorker) Timeout(*river.Job[WatchdogArgs]) time.Duration { return jobgraph.StepTimeout }

// Work runs one pass and completes the job in the same transaction.
func (w *WatchdogWorker) Work(ctx context.Context, job *river.Job[WatchdogArgs]) error {
	retried := uiaction.Retried(job.JobRow)
	var rep jobgraph.WatchReport
	var out watchOutput
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		var err error
		if rep, err = w.Graph.WatchTx(ctx, tx, w.StallAfter); err != nil {
			return err
		}
		out = watchOutput{Watched: rep.Watched, Canceled: rep.Canceled, Settled: rep.Settled, Drifted: len(rep.Drift)}
		if retried {
			if err := jobgraph.RecordAction(ctx, tx, nil, nil, "River UI retry of build_watchdog %d: ran %s", job.ID, out); err != nil {
				return err
			}
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCompleted, Output: out})
	})
	switch {
	case err != nil && queue.CancelledRemotely(ctx):
		return stopped(ctx, w.Pool, w.Logger, job, 0, "the watchdog pass was rolled back: it changed nothing; the next one comes at the watchdog's interval")
	case err != nil:
		_ = river.RecordOutput(ctx, nil) // see ReportWorker.Work
		return err
	}
	if retried {
		queue.LogUIAction(ctx, orDefault(w.Logger), job.JobRow, queue.UIActionRetry, "ran "+out.String())
	}
	w.Metrics.watched(rep)
	return nil
}
