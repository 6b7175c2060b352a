// Command build-worker runs build jobs for one or more targets. River's fetch hands it the
// build_run River jobs of its targets' queues in the build_scheduler schema, each one attempt at
// one build; it runs exactly that build, streams its output to the scheduler's log store and
// applies the outcome to the job graph in one transaction, with the dependents' River jobs.
//
// Its River client is a full member of the build_scheduler schema: it registers every kind and
// periodic job the scheduler does (so whichever client River elects leader rescues and enqueues
// correctly) but works only the build queues of its targets.
//
// Run it with --help for every environment variable it reads (prefix BUILD_WORKER_).
package main

import (
	"context"
	"io"

	"drover.dev/services/build-scheduler/internal/buildworker"
	"drover.dev/services/build-scheduler/internal/work"
	"drover.dev/shared/service"
)

func main() {
	var cfg buildworker.Config
	service.Main("BUILD_WORKER", &cfg, func(ctx context.Context, stdout io.Writer) error {
		kinds := work.Settings{WatchdogInterval: cfg.WatchdogInterval}.Register
		return buildworker.Run(ctx, cfg, kinds, nil, stdout)
	})
}
