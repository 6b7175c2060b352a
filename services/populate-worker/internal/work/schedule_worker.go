package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
)

// ScheduleWorker works populate_schedule jobs, enqueued by the change listener, by the periodic
// schedule and by other services: cleanup_jobs when asked, then schedule_jobs. When the minimum
// scheduling interval suppresses the call, the job snoozes for an interval, so that rows inserted
// just after a schedule are still picked up. Retried in River UI, it runs at once whatever the
// interval says; cancelled while it runs, the table it was scheduling rolls back.
type ScheduleWorker struct {
	river.WorkerDefaults[queue.PopulateScheduleArgs]
	Engine *populate.Engine
	Log    *ActionLog
	// MaintenanceTimeout bounds one job.
	MaintenanceTimeout time.Duration
}

// Timeout is the longest a schedule job may run.
func (w *ScheduleWorker) Timeout(*river.Job[queue.PopulateScheduleArgs]) time.Duration {
	return w.MaintenanceTimeout
}

// tableOutput is what a schedule or cleanup job did to one table, as River UI shows it.
type tableOutput struct {
	Table      string `json:"table"`
	Scheduled  *int   `json:"scheduled,omitempty"`
	Removed    *int   `json:"removed,omitempty"`
	Suppressed bool   `json:"suppressed_by_min_scheduling_interval,omitempty"`
}

// Work schedules one table, or every table when the args name none.
func (w *ScheduleWorker) Work(ctx context.Context, job *river.Job[queue.PopulateScheduleArgs]) error {
	names, err := tableNames(ctx, w.Engine, job.Args.Table)
	if err != nil {
		return cancelUnknownTable(err)
	}
	interval := w.Engine.Config().MinSchedulingInterval
	if retried(job.JobRow) {
		interval = 0 // River UI's Retry: schedule now
	}
	out, suppressed, err := w.schedule(ctx, job.Args, names, interval)
	if err == nil && suppressed && job.Args.Table != "" && interval != 0 {
		return river.JobSnooze(interval)
	}
	if err == nil {
		err = river.RecordOutput(ctx, out)
	}
	w.Log.ran(ctx, job.JobRow, "ran schedule_jobs: "+jsonText(out), err)
	return err
}

// schedule runs cleanup_jobs (when args ask) and schedule_jobs of every table of names.
func (w *ScheduleWorker) schedule(ctx context.Context, args queue.PopulateScheduleArgs, names []string, interval time.Duration) ([]tableOutput, bool, error) {
	var out []tableOutput
	suppressed := false
	for _, name := range names {
		t := tableOutput{Table: name}
		if args.Cleanup {
			res, err := w.Engine.CleanupJobs(ctx, name, interval)
			if err != nil {
				return out, false, err
			}
			if !res.Suppressed {
				t.Removed = &res.Removed
			}
		}
		res, err := w.Engine.ScheduleJobs(ctx, name, populate.ScheduleOpts{Force: args.Force, MinInterval: &interval, Background: true})
		if err != nil {
			return out, false, err
		}
		t.Scheduled, t.Suppressed = &res.Scheduled, res.Suppressed
		suppressed = suppressed || res.Suppressed
		out = append(out, t)
	}
	return out, suppressed, nil
}

// CleanupWorker works populate_cleanup jobs: the daily cleanup_jobs. Retried in River UI, it
// runs again.
type CleanupWorker struct {
	river.WorkerDefaults[queue.PopulateCleanupArgs]
	Engine             *populate.Engine
	Log                *ActionLog
	MaintenanceTimeout time.Duration
}

// Timeout is the longest a cleanup job may run.
func (w *CleanupWorker) Timeout(*river.Job[queue.PopulateCleanupArgs]) time.Duration {
	return w.MaintenanceTimeout
}

// Work cleans up one table, or every table when the args name none.
func (w *CleanupWorker) Work(ctx context.Context, job *river.Job[queue.PopulateCleanupArgs]) error {
	names, err := tableNames(ctx, w.Engine, job.Args.Table)
	if err != nil {
		return cancelUnknownTable(err)
	}
	var out []tableOutput
	for _, name := range names {
		var res populate.CleanupResult
		if res, err = w.Engine.CleanupJobs(ctx, name, 0); err != nil {
			break
		}
		out = append(out, tableOutput{Table: name, Removed: &res.Removed})
	}
	if err == nil {
		err = river.RecordOutput(ctx, out)
	}
	w.Log.ran(ctx, job.JobRow, "ran cleanup_jobs: "+jsonText(out), err)
	return err
}

// tableNames is name when it names a table (this replica may not have heard of a table just
// defined through another: it looks it up), or every table when it is empty.
func tableNames(ctx context.Context, e *populate.Engine, name string) ([]string, error) {
	if name != "" {
		if _, err := e.Table(ctx, name); err != nil {
			return nil, fmt.Errorf("schedule %s: %w", name, err)
		}
		return []string{name}, nil
	}
	var names []string
	for _, t := range e.Tables().All() {
		names = append(names, t.Name)
	}
	return names, nil
}

// cancelUnknownTable ends a job for a table that is not (or no longer) defined as cancelled: no
// retry can do it. Any other error is retried.
func cancelUnknownTable(err error) error {
	if errors.Is(err, problem.ErrNotFound) {
		return river.JobCancel(err)
	}
	return err
}

// Config is what Register needs beyond the engine.
type Config struct {
	// Log receives the River UI button presses that reach a worker.
	Log *ActionLog
	// MakeTimeout bounds one make; MaintenanceTimeout one schedule or cleanup job; FeedTimeout
	// one feed pass.
	MakeTimeout, MaintenanceTimeout, FeedTimeout time.Duration
	// ScheduleEvery and CleanupEvery are the periods of the periodic schedule and cleanup.
	ScheduleEvery, CleanupEvery time.Duration
}

// Register adds the populate workers and their periodic jobs.
func Register(workers *river.Workers, e *populate.Engine, cfg Config) []*river.PeriodicJob {
	river.AddWorker(workers, &MakeWorker{Engine: e, Log: cfg.Log, MakeTimeout: cfg.MakeTimeout})
	river.AddWorker(workers, &FeedWorker{Engine: e, Log: cfg.Log, FeedTimeout: cfg.FeedTimeout})
	river.AddWorker(workers, &ScheduleWorker{Engine: e, Log: cfg.Log, MaintenanceTimeout: cfg.MaintenanceTimeout})
	river.AddWorker(workers, &CleanupWorker{Engine: e, Log: cfg.Log, MaintenanceTimeout: cfg.MaintenanceTimeout})
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(cfg.ScheduleEvery), func() (river.JobArgs, *river.InsertOpts) {
			return queue.PopulateScheduleArgs{}, nil
		}, &river.PeriodicJobOpts{ID: "populate_schedule", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(cfg.CleanupEvery), func() (river.JobArgs, *river.InsertOpts) {
			return queue.PopulateCleanupArgs{}, nil
		}, &river.PeriodicJobOpts{ID: "populate_cleanup"}),
	}
}
