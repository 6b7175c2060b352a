package main

import (
	"time"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/api"
	"drover.dev/services/build-scheduler/internal/buildworker"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/services/build-scheduler/internal/work"
	"drover.dev/shared/service"
)

// wire registers the build_scheduler queue's workers (watchdog, reports, UI actions) and the
// periodic watchdog, builds the River client, registers the routes, which submit groups with it,
// and starts the lease reaper.
func wire(d *service.Deps, cfg Config, submit api.Submit) error {
	logs, err := logstore.Open(cfg.Config, d.Pool)
	if err != nil {
		return err
	}
	graph := &jobgraph.Graph{Tokens: d.Inserters[queue.BuildScheduler]}
	// The scheduler works no build queue; it registers the build worker only so that its
	// River leader knows the kind and its Timeout (see package work).
	build := &buildworker.Worker{
		Pool: d.Pool, Graph: graph, Logs: logs, Lease: time.Minute, Logger: d.Logger,
		MaxJobTimeout: cfg.MaxJobTimeout, TokenSlack: cfg.TokenSlack,
	}
	m := work.NewMetrics(d.Server.Metrics, d.Logger)
	d.Gauges(work.Gauges...)
	settings := work.Settings{WatchdogInterval: cfg.WatchdogInterval, StallAfter: cfg.StallAfter, Metrics: m, Logger: d.Logger}
	d.PeriodicJobs = append(d.PeriodicJobs, settings.Register(d.Workers, d.Pool, graph, build)...)
	if _, err := d.NewClient(); err != nil {
		return err
	}
	api.Routes(d.Server.API, d.Pool, graph, logs, submit, d.Backlog)
	reaper := &work.Reaper{Pool: d.Pool, Graph: graph, Interval: cfg.ReapInterval, TokenGrace: cfg.TokenGrace, Logger: d.Logger, Metrics: m}
	d.Go(reaper.Run)
	return nil
}
