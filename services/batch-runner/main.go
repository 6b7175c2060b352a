// Command batch-runner runs synthetic job batches against every miner's executors at the same instant.
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"io"
	"net"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/api"
	"drover.dev/shared/service"
)

func main() {
	var cfg Config
	service.Main(queue.BatchRunner.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	batchCfg, err := batchConfig(cfg)
	if err != nil {
		return err
	}
	rescueAfter, err := rescueAfter(cfg)
	if err != nil {
		return err
	}
	if err := checkSharding(cfg); err != nil {
		return err
	}
	if err := checkLease(cfg); err != nil {
		return err
	}
	spec := service.Spec{
		Service:  queue.BatchRunner,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
		// One batch at a time per process; the batches table's unique index holds it across replicas.
		// Shards of a sharded batch have their own queue, worked by every replica.
		Queues: map[string]int{queue.QueueBatches: 1, queue.QueueBatchShards: cfg.ShardWorkers},
		// Every kind has its own Timeout; River's client-wide one must not exceed RescueStuckJobsAfter.
		JobTimeout:           rescueAfter,
		RescueStuckJobsAfter: rescueAfter,
		OpenAPI:              api.OpenAPI,
	}
	return service.Run(ctx, spec, stdout, func(d *service.Deps) error { return wire(d, cfg, batchCfg) })
}
