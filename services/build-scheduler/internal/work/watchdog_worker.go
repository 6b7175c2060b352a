package work

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
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
type WatchdogWorker struct {
	river.WorkerDefaults[WatchdogArgs]
	Pool       *pgxpool.Pool
	Graph      *jobgraph.Graph
	StallAfter time.Duration
	Metrics    *Metrics
}

// Work runs one pass and completes the job in the same transaction.
func (w *WatchdogWorker) Work(ctx context.Context, job *river.Job[WatchdogArgs]) error {
	var rep jobgraph.WatchReport
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		var err error
		if rep, err = w.Graph.WatchTx(ctx, tx, w.StallAfter); err != nil {
			return err
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return err
	}
	w.Metrics.watched(rep)
	return nil
}
