package main

import (
	"time"

	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/api"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/work"
	"drover.dev/shared/service"
)

// wire registers the run_batch and run_batch_shard workers, the lease sweeper and the periodic
// batch, builds the River client, and registers the routes, which insert batches with it.
func wire(d *service.Deps, cfg Config, batchCfg batch.Config) error {
	progress := &batch.Tracker{}
	m := work.NewMetrics(d.Server.Metrics, cfg.Cycle)
	d.Gauges(work.Gauges...)
	river.AddWorker(d.Workers, &work.RunBatchWorker{
		Pool: d.Pool, Inserters: d.Inserters, Logger: d.Logger, Batch: batchCfg,
		Headroom: cfg.Headroom, JobTimeout: cfg.JobTimeout, PeakEvery: cfg.PeakEvery, BusySnooze: 30 * time.Second,
		Progress: progress, ShardMiners: cfg.ShardMiners, Metrics: m, Lease: cfg.Lease,
	})
	river.AddWorker(d.Workers, &work.RunBatchShardWorker{
		Pool: d.Pool, Inserters: d.Inserters, Logger: d.Logger, Batch: batchCfg, Metrics: m,
		Agreement: work.Agreement{Margin: cfg.SendMargin, Wait: cfg.ShardWait, Poll: cfg.ShardPoll},
		Headroom:  cfg.Headroom, JobTimeout: cfg.JobTimeout, PeakEvery: cfg.PeakEvery, Lease: cfg.Lease,
	})
	// Every replica sweeps: a batch whose process died is taken over within LEASE + LEASE_SWEEP.
	d.Go((&work.Sweeper{
		Pool: d.Pool, Inserter: d.Inserters[queue.BatchRunner], Logger: d.Logger, Lease: cfg.Lease, Interval: cfg.LeaseSweep, Metrics: m,
	}).Run)
	d.PeriodicJobs = append(d.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(cfg.Cycle),
		func() (river.JobArgs, *river.InsertOpts) {
			return queue.RunBatchArgs{Reason: "periodic", RequestedAt: time.Now().UTC()}, nil
		}, &river.PeriodicJobOpts{ID: "run_batch", RunOnStart: cfg.RunOnStart}))
	client, err := d.NewClient()
	if err != nil {
		return err
	}
	api.Routes(d.Server.API, d.Pool, client, progress)
	return nil
}
