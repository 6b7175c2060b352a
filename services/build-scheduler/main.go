// Command build-scheduler schedules groups of build jobs with dependencies onto per-target
// workers (the build-worker command in this module).
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/api"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/service"
)

func main() {
	var cfg Config
	service.Main(queue.BuildScheduler.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	submit := cfg.submit()
	if err := submit.Check(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	spec := service.Spec{
		Service:  queue.BuildScheduler,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
		Queues:   map[string]int{queue.QueueBuildScheduler: 2},
		OpenAPI:  api.OpenAPI,
		// As every client of the schema: the shortest kind timeout, so that River's rescuer
		// takes a dead process's build_watchdog back within it; build_run jobs have timeouts of
		// their own (buildworker.Worker.Timeout), and the liveness sweep gives them back first.
		JobTimeout:           jobgraph.StepTimeout,
		RescueStuckJobsAfter: jobgraph.StepTimeout,
	}
	return service.Run(ctx, spec, stdout, func(d *service.Deps) error { return wire(d, cfg, submit) })
}
