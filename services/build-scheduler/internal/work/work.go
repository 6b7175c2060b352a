// Package work holds the build scheduler's River workers and background loops: the watchdog, and
// the reaper that settles the builds whose River job went away without running them.
//
// Every River client on the build_scheduler schema (the scheduler's and each build-worker's)
// registers the same kinds and periodic jobs through Register and differs only in the queues it
// works. River's leader may be any of them; whichever leads then enqueues the watchdog, and its
// stuck-job rescuer knows every kind, so it retries a stuck job instead of discarding it as
// unknown.
package work

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// Settings are the scheduler-side knobs the workers need.
type Settings struct {
	// WatchdogInterval is how often the watchdog runs.
	WatchdogInterval time.Duration
	// StallAfter is how long a group's counts may stay unchanged, with nothing running, before
	// the watchdog cancels it.
	StallAfter time.Duration
	// Metrics counts reports and watchdog actions; nil (the build-worker) counts nothing.
	Metrics *Metrics
	// Logger hears of River UI's buttons pressed on reports and watchdog passes; nil (the
	// build-worker, which does not work their queue) is slog.Default().
	Logger *slog.Logger
}

// Register adds the scheduler's workers and periodic jobs. build is the build_run worker: the
// scheduler registers it without working any build queue, so that its River leader knows the
// kind. Its shape is buildworker.Kinds: the build-worker command passes it to the build worker's
// River client, which so registers every kind without the worker importing this package.
func (s Settings) Register(workers *river.Workers, pool *pgxpool.Pool, graph *jobgraph.Graph, build river.Worker[queue.BuildRunArgs]) []*river.PeriodicJob {
	river.AddWorker(workers, &WatchdogWorker{Pool: pool, Graph: graph, StallAfter: s.StallAfter, Metrics: s.Metrics, Logger: s.Logger})
	river.AddWorker(workers, build)
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(s.WatchdogInterval),
			func() (river.JobArgs, *river.InsertOpts) { return WatchdogArgs{}, nil },
			&river.PeriodicJobOpts{ID: "build_watchdog"}),
	}
}
