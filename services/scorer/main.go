// Command scorer turns finished batches into per-miner scores and the weights a validator sets on chain.
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"io"
	"net"

	"drover.dev/queue"
	"drover.dev/services/scorer/internal/api"
	"drover.dev/shared/service"
)

func main() {
	var cfg Config
	service.Main(queue.Scorer.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	params, err := cfg.params()
	if err != nil {
		return err
	}
	cfg = cfg.forMode()
	if cfg.PylonAddress, err = pylonAddress(cfg); err != nil {
		return err
	}
	signer, err := directClient(cfg)
	if err != nil {
		return err
	}
	setWeights := cfg.PylonAddress != "" || signer != nil
	queues := map[string]int{queue.QueueScoring: max(cfg.Workers, 1)}
	if setWeights {
		queues[queue.QueueWeights] = 1
	}
	rescue := rescueAfter(cfg, signer)
	spec := service.Spec{
		Service:  queue.Scorer,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
		Queues:   queues,
		// Every kind has its own Timeout; River's client-wide one must not exceed RescueStuckJobsAfter.
		JobTimeout:           rescue,
		RescueStuckJobsAfter: rescue,
		OpenAPI:              api.OpenAPI,
	}
	return service.Run(ctx, spec, stdout, func(d *service.Deps) error { return wire(d, cfg, params, signer, setWeights) })
}
