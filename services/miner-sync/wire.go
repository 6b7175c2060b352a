package main

import (
	"time"

	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/api"
	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/work"
	"drover.dev/shared/service"
)

// wire registers the sync_metagraph worker and the periodic sync, builds the River client, and
// registers the routes, which insert syncs with it.
func wire(d *service.Deps, cfg Config, source metagraph.Source, syncTimeout time.Duration) error {
	river.AddWorker(d.Workers, &work.SyncMetagraphWorker{
		DB: d.Pool, Source: source, Logger: d.Logger, JobTimeout: syncTimeout,
		Metrics: work.NewMetrics(d.Server.Metrics),
	})
	d.Gauges(work.Gauges...)
	d.PeriodicJobs = append(d.PeriodicJobs, river.NewPeriodicJob(
		river.PeriodicInterval(cfg.SyncInterval),
		func() (river.JobArgs, *river.InsertOpts) { return queue.SyncMetagraphArgs{Reason: "periodic"}, nil },
		&river.PeriodicJobOpts{ID: "sync_metagraph", RunOnStart: true},
	))
	if _, err := d.NewClient(); err != nil {
		return err
	}
	api.Routes(d.Server.API, d.Pool, d.Inserters[queue.MinerSync])
	return nil
}
