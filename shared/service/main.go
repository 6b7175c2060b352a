package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"drover.dev/shared/config"
)

// Main is the whole of a command's main function: it reads the environment variables named
// envPrefix_* (e.g. BUILD_WORKER_*) into settings (a pointer to the command's Config), answers
// --help, runs run until SIGINT or SIGTERM, and exits 1 with the error printed when run fails,
// after the command's name (the prefix in lower case with dashes: build-worker).
func Main(envPrefix string, settings any, run func(ctx context.Context, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := config.Load(envPrefix, settings, os.Args[1:], os.Stdout)
	if errors.Is(err, config.ErrHelp) {
		return
	}
	if err == nil {
		err = run(ctx, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", strings.ToLower(strings.ReplaceAll(envPrefix, "_", "-")), err)
		os.Exit(1)
	}
}
