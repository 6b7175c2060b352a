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
// just after a schedule are still picked up.
type ScheduleWorker struct {
	river.WorkerDefaults[queue.PopulateScheduleArgs]
	Engine *populate.Engine
}

// Work schedules one table, or every table when the args name none.
func (w *ScheduleWorker) Work(ctx context.Context, job *river.Job[queue.PopulateScheduleArgs]) error {
	names, err := tableNames(w.Engine, job.Args.Table)
	if err != nil {
		return river.JobCancel(err)
	}
	interval := w.Engine.Config().MinSchedulingInterval
	suppressed := false
	for _, name := range names {
		if job.Args.Cleanup {
			if _, err := w.Engine.CleanupJobs(ctx, name, interval); err != nil {
				return err
			}
		}
		res, err := w.Engine.ScheduleJobs(ctx, name, populate.ScheduleOpts{Force: job.Args.Force})
		if err != nil {
			return err
		}
		suppressed = suppressed || res.Suppressed
	}
	if suppressed && job.Args.Table != "" {
		return river.JobSnooze(interval)
	}
	return nil
}

// CleanupWorker works populate_cleanup jobs: the daily cleanup_jobs.
type CleanupWorker struct {
	river.WorkerDefaults[queue.PopulateCleanupArgs]
	Engine *populate.Engine
}

// Work cleans up one table, or every table when the args name none.
func (w *CleanupWorker) Work(ctx context.Context, job *river.Job[queue.PopulateCleanupArgs]) error {
	names, err := tableNames(w.Engine, job.Args.Table)
	if err != nil {
		return river.JobCancel(err)
	}
	for _, name := range names {
		if _, err := w.Engine.CleanupJobs(ctx, name, 0); err != nil {
			return err
		}
	}
	return nil
}

func tableNames(e *populate.Engine, name string) ([]string, error) {
	if name != "" {
		if _, err := e.Tables().Get(name); err != nil {
			if errors.Is(err, problem.ErrNotFound) {
				return nil, fmt.Errorf("schedule %s: %w", name, err)
			}
			return nil, err
		}
		return []string{name}, nil
	}
	var names []string
	for _, t := range e.Tables().All() {
		names = append(names, t.Name)
	}
	return names, nil
}

// Register adds the populate workers and their periodic jobs.
func Register(workers *river.Workers, e *populate.Engine, makeTimeout, scheduleEvery, cleanupEvery time.Duration) []*river.PeriodicJob {
	river.AddWorker(workers, &MakeWorker{Engine: e, MakeTimeout: makeTimeout})
	river.AddWorker(workers, &RunMakeWorker{Engine: e, MakeTimeout: makeTimeout})
	river.AddWorker(workers, &FeedWorker{Engine: e})
	river.AddWorker(workers, &ScheduleWorker{Engine: e})
	river.AddWorker(workers, &CleanupWorker{Engine: e})
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(scheduleEvery), func() (river.JobArgs, *river.InsertOpts) {
			return queue.PopulateScheduleArgs{}, nil
		}, &river.PeriodicJobOpts{ID: "populate_schedule", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(cleanupEvery), func() (river.JobArgs, *river.InsertOpts) {
			return queue.PopulateCleanupArgs{}, nil
		}, &river.PeriodicJobOpts{ID: "populate_cleanup"}),
	}
}
