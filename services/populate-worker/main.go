// Command populate-worker fills DataJoint-style computed tables: it schedules missing keys, reserves each once and runs make().
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/api"
	"drover.dev/shared/service"
)

func main() {
	var cfg Config
	service.Main(queue.PopulateWorker.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	if ln == nil {
		var err error
		if ln, err = new(net.ListenConfig).Listen(ctx, "tcp", cfg.HTTPAddr); err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
		}
	}
	doc, err := api.OpenAPI(cfg.Examples, cfg.ExamplesSeed)
	if err != nil {
		return err
	}
	spec := service.Spec{
		Service:  queue.PopulateWorker,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
		Queues:   cfg.Queues(),
		OpenAPI:  doc,
		// Every kind has its own timeout; River's rescuer takes back a running job once its
		// kind's timeout has passed, but looks only at jobs running longer than
		// RescueStuckJobsAfter, which River wants at least JobTimeout.
		JobTimeout:           cfg.RescueAfter(),
		RescueStuckJobsAfter: cfg.RescueAfter(),
	}
	return service.Run(ctx, spec, stdout, func(deps *service.Deps) error { return wire(ctx, cfg, ln, deps) })
}
