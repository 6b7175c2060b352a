package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/api"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/signing"
	"drover.dev/services/populate-worker/internal/work"
	"drover.dev/shared/service"
	"drover.dev/shared/tracing"
)

// wire registers the computed tables, checks them against the database, installs their change
// triggers and adds the workers and periodic jobs, then builds the River client, then adds the
// routes and background loops.
func wire(ctx context.Context, cfg Config, ln net.Listener, deps *service.Deps) error {
	reg, err := registry(cfg, fmt.Sprintf("http://127.0.0.1:%d/examples/functions/energy", ln.Addr().(*net.TCPAddr).Port))
	if err != nil {
		return err
	}
	if err := reg.Check(ctx, deps.Pool); err != nil {
		return err
	}
	var tables []string
	for _, t := range reg.All() {
		tables = append(tables, t.Name)
	}
	keys, unsigned, err := functionKeys(reg, cfg.FunctionSecret, os.Getenv)
	if err != nil {
		return err
	}
	if len(unsigned) > 0 {
		deps.Logger.WarnContext(ctx, "function makes are called unsigned: set POPULATE_WORKER_FUNCTION_SECRET, which the functions check", "tables", unsigned)
	}
	deps.Gauges(populate.JobGauges(reg.Names)...)
	engine := populate.NewEngine(deps.Pool, deps.Inserters[queue.PopulateWorker], reg, populate.Config{
		MinSchedulingInterval: cfg.MinSchedulingInterval, OrphanTimeout: cfg.OrphanTimeout,
		KeepSuccess: cfg.KeepSuccess, WorkerID: cfg.WorkerID, FeedAhead: cfg.FeedAhead, FeedEvery: cfg.FeedEvery,
		RescheduleGrace: cfg.RescheduleGrace,
		Metrics:         populate.NewMetrics(deps.Server.Metrics, deps.Logger, tables),
		HTTPClient:      &http.Client{Timeout: 5 * time.Minute, Transport: signing.Transport(keys, tracing.Transport(nil))},
	})
	if err := engine.StartTables(ctx); err != nil {
		return err
	}
	if err := engine.InstallTriggers(ctx); err != nil {
		return err
	}
	deps.PeriodicJobs = append(deps.PeriodicJobs, work.Register(deps.Workers, engine, work.Config{
		Log: &work.ActionLog{Logger: deps.Logger}, MakeTimeout: cfg.MakeTimeout, MaintenanceTimeout: cfg.MaintenanceTimeout,
		FeedTimeout: cfg.FeedTimeout, ScheduleEvery: cfg.ScheduleEvery, CleanupEvery: cfg.CleanupEvery,
	})...)
	if _, err := deps.NewClient(); err != nil {
		return err
	}
	api.Routes(deps.Server, engine, api.Examples{Function: cfg.Examples, Seed: cfg.Examples && cfg.ExamplesSeed, FunctionSecret: cfg.FunctionSecret}, cfg.WriteTimeout, deps.Backlog,
		api.Admin{Tokens: cfg.AdminTokens, APITokens: cfg.APITokens, Disabled: cfg.AuthDisabled})
	deps.Go(func(ctx context.Context) error {
		<-ctx.Done()
		engine.SetStopping() // before River cancels the makes that outlive the soft stop
		return nil
	})
	deps.Go(func(ctx context.Context) error { return listenLoop(ctx, engine, cfg.ListenFlushEvery, deps) })
	deps.Go(func(ctx context.Context) error { return reclaimLoop(ctx, engine, cfg.ReclaimEvery, deps) })
	deps.Go(func(ctx context.Context) error { return engine.WatchRuns(ctx, cfg.RunWatchEvery) })
	return nil
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
