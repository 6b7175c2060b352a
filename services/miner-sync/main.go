// Command miner-sync keeps the miners table in step with the subnet's metagraph.
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"io"
	"net"
	"time"

	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/api"
	"drover.dev/shared/service"
)

func main() {
	var cfg Config
	service.Main(queue.MinerSync.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	source, err := sourceOf(cfg)
	if err != nil {
		return err
	}
	syncTimeout := cfg.SourceTimeout + 30*time.Second
	rescue := rescueAfter(syncTimeout)
	spec := service.Spec{
		Service:  queue.MinerSync,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
		Queues:   map[string]int{queue.QueueMetagraph: 1},
		// Every kind has its own Timeout; River's client-wide one must not exceed RescueStuckJobsAfter.
		JobTimeout:           rescue,
		RescueStuckJobsAfter: rescue,
		OpenAPI:              api.OpenAPI,
	}
	return service.Run(ctx, spec, stdout, func(d *service.Deps) error { return wire(d, cfg, source, syncTimeout) })
}
