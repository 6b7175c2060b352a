package main

import (
	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/api"
	"drover.dev/services/build-scheduler/internal/buildworker"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/services/build-scheduler/internal/work"
	"drover.dev/shared/service"
)

// wire registers the build_scheduler queue's workers (the watchdog) and the
// periodic watchdog, builds the River client, registers the routes, which submit groups with it,
// and starts the reaper.
func wire(d *service.Deps, cfg Config, submit api.Submit) error {
	logs, err := logstore.Open(cfg.Config, d.Pool)
	if err != nil {
		return err
	}
	graph := &jobgraph.Graph{Builds: d.Inserters[queue.BuildScheduler]}
	// The scheduler works no build queue; it registers the build worker only so that its
	// River leader knows the kind and its Timeout (see package work).
	build := &buildworker.Worker{
		Pool: d.Pool, Graph: graph, Logs: logs, Logger: d.Logger,
		MaxJobTimeout: cfg.MaxJobTimeout, Slack: cfg.Slack,
	}
	// The scheduler's liveness sweeps give a dead worker's builds their new attempts.
	d.Takeovers = map[string]queue.Takeover{(queue.BuildRunArgs{}).Kind(): graph.Takeover}
	m := work.NewMetrics(d.Server.Metrics, d.Logger)
	d.Gauges(work.Gauges...)
	settings := work.Settings{WatchdogInterval: cfg.WatchdogInterval, StallAfter: cfg.StallAfter, Metrics: m, Logger: d.Logger}
	d.PeriodicJobs = append(d.PeriodicJobs, settings.Register(d.Workers, d.Pool, graph, build)...)
	if _, err := d.NewClient(); err != nil {
		return err
	}
	api.Routes(d.Server.API, d.Pool, graph, logs, submit, d.Backlog)
	reaper := &work.Reaper{Pool: d.Pool, Graph: graph, Interval: cfg.ReapInterval, Logger: d.Logger, Metrics: m}
	d.Go(reaper.Run)
	return nil
}
