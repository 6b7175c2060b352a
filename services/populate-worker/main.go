// Command populate-worker fills DataJoint-style computed tables: it schedules missing keys, reserves each once and runs make().
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"io"
	"net"

	"drover.dev/queue"
	"drover.dev/shared/config"
	"drover.dev/shared/service"
)

// Config is the populate-worker's configuration, read from PopulateWorker_* environment variables.
type Config struct {
	config.Common
	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8085" desc:"HTTP listen address"`
}

func main() {
	var cfg Config
	service.Main(queue.PopulateWorker, &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	spec := service.Spec{
		Service:  queue.PopulateWorker,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
	}
	return service.Run(ctx, spec, stdout, func(*service.Deps) error { return nil })
}
