// Command build-worker runs build jobs for one or more targets. It takes dispatch tokens from
// the targets' River queues in the build_scheduler schema, claims jobs under a heartbeat lease,
// runs them, streams their output to the scheduler's log store and reports each outcome through
// a job in the scheduler's queue.
//
// Its River client is a full member of the build_scheduler schema: it registers every kind and
// periodic job the scheduler does (so whichever client River elects leader rescues and enqueues
// correctly) but works only the build queues of its targets.
//
// Run it with --help for every environment variable it reads (prefix BUILD_WORKER_).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"drover.dev/services/build-scheduler/internal/buildworker"
	"drover.dev/services/build-scheduler/internal/work"
	"drover.dev/shared/config"
)

// envPrefix is the prefix of the build-worker's environment variables.
const envPrefix = "BUILD_WORKER"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cfg buildworker.Config
	err := config.Load(envPrefix, &cfg, os.Args[1:], os.Stdout)
	if errors.Is(err, config.ErrHelp) {
		return
	}
	if err == nil {
		kinds := work.Settings{WatchdogInterval: cfg.WatchdogInterval}.Register
		err = buildworker.Run(ctx, cfg, kinds, nil, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build-worker: %v\n", err)
		os.Exit(1)
	}
}
