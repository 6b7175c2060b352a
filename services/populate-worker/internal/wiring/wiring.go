// Package wiring starts what makes keys in a populate-worker process: the engine on the
// service's pool and inserter, its River workers, the River client, and the loops beside it (run
// watch, change listener, reclaim). The service's main and populate-bench both start it, so the
// bench measures the service as a deployment runs it.
package wiring

import (
	"context"
	"net/http"
	"time"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/work"
	"drover.dev/shared/service"
)

// Options are what the caller decides besides the settings.
type Options struct {
	WorkerID string // the River client id, for the engine's reservations
	// HTTPClient calls the function makes (signed and traced in the service); nil: a make
	// that calls a function fails.
	HTTPClient *http.Client
	// Periodic adds work.Register's periodic schedule and cleanup of every table. The bench leaves
	// them out: the schedule runs at start and would schedule its keys before its clock starts.
	Periodic bool
}

// Start registers the tables of reg, checked against the database, starts them and installs
// their change triggers, adds the workers (and the periodic jobs when o.Periodic), builds the
// River client (Deps.NewClient) and adds the loops beside it. It returns the engine, for the
// routes.
func Start(ctx context.Context, deps *service.Deps, reg *populate.Registry, s Settings, o Options) (*populate.Engine, error) {
	if err := reg.Check(ctx, deps.Pool); err != nil {
		return nil, err
	}
	var tables []string
	for _, t := range reg.All() {
		tables = append(tables, t.Name)
	}
	engine := populate.NewEngine(deps.Pool, deps.Inserters[queue.PopulateWorker], reg, populate.Config{
		MinSchedulingInterval: s.MinSchedulingInterval, OrphanTimeout: s.OrphanTimeout,
		KeepSuccess: s.KeepSuccess, WorkerID: o.WorkerID, FeedAhead: s.FeedAhead, FeedEvery: s.FeedEvery,
		RescheduleGrace: s.RescheduleGrace,
		Metrics:         populate.NewMetrics(deps.Server.Metrics, deps.Logger, tables),
		HTTPClient:      o.HTTPClient,
	})
	if err := engine.StartTables(ctx); err != nil {
		return nil, err
	}
	if err := engine.InstallTriggers(ctx); err != nil {
		return nil, err
	}
	periodic := work.Register(deps.Workers, engine, work.Config{
		Log: &work.ActionLog{Logger: deps.Logger}, MakeTimeout: s.MakeTimeout, MaintenanceTimeout: s.MaintenanceTimeout,
		FeedTimeout: s.FeedTimeout, ScheduleEvery: s.ScheduleEvery, CleanupEvery: s.CleanupEvery,
	})
	if o.Periodic {
		deps.PeriodicJobs = append(deps.PeriodicJobs, periodic...)
	}
	if _, err := deps.NewClient(); err != nil {
		return nil, err
	}
	deps.Go(func(ctx context.Context) error {
		<-ctx.Done()
		engine.SetStopping() // before River cancels the makes that outlive the soft stop
		return nil
	})
	deps.Go(func(ctx context.Context) error { return listenLoop(ctx, engine, s.ListenFlushEvery, deps) })
	deps.Go(func(ctx context.Context) error { return reclaimLoop(ctx, engine, s.ReclaimEvery, deps) })
	deps.Go(func(ctx context.Context) error { return engine.WatchRuns(ctx, s.RunWatchEvery) })
	return engine, nil
}

// reclaimLoop returns dead workers' reservations to scheduled on every replica; the sweep is one
// cheap statement and safe to run concurrently (SKIP LOCKED).
func reclaimLoop(ctx context.Context, e *populate.Engine, every time.Duration, deps *service.Deps) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if n, err := e.Reclaim(ctx); err != nil && ctx.Err() == nil {
			deps.Logger.WarnContext(ctx, "reclaim orphaned reservations", "error", err)
		} else if n > 0 {
			deps.Logger.InfoContext(ctx, "reclaimed orphaned reservations", "jobs", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// listenLoop keeps the change listener running: a lost connection is re-established, since the
// periodic schedule alone would leave new upstream rows waiting for minutes.
func listenLoop(ctx context.Context, e *populate.Engine, flushEvery time.Duration, deps *service.Deps) error {
	for {
		err := e.Listen(ctx, deps.Inserters[queue.PopulateWorker], flushEvery)
		if ctx.Err() != nil {
			return nil
		}
		deps.Logger.WarnContext(ctx, "change listener stopped; restarting", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}
