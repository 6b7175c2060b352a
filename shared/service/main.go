package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"drover.dev/queue"
	"drover.dev/shared/config"
)

// Main is the whole of a service's main function: it reads the configuration into settings (a
// pointer to the service's Config), answers --help, runs run until SIGINT or SIGTERM, and exits 1
// with the error printed when run fails.
func Main(svc queue.Service, settings any, run func(ctx context.Context, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := config.Load(svc.EnvPrefix(), settings, os.Args[1:], os.Stdout)
	if errors.Is(err, config.ErrHelp) {
		return
	}
	if err == nil {
		err = run(ctx, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", svc, err)
		os.Exit(1)
	}
}
