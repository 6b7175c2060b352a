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
	"time"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/api"
	"drover.dev/services/build-scheduler/internal/buildworker"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/services/build-scheduler/internal/work"
	"drover.dev/shared/config"
	"drover.dev/shared/service"
)

// Config is the build-scheduler's configuration, read from BUILD_SCHEDULER_* environment
// variables.
type Config struct {
	config.Common
	logstore.Config // build-workers must name the same store

	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8084" desc:"HTTP listen address"`

	MaxJobsPerGroup   int           `envconfig:"MAX_JOBS_PER_GROUP" default:"10000" desc:"largest group accepted"`
	MaxDepsPerJob     int           `envconfig:"MAX_DEPS_PER_JOB" default:"1000" desc:"most dependencies one job may name"`
	MaxJobBytes       int           `envconfig:"MAX_JOB_BYTES" default:"65536" desc:"largest command + payload + env of one job, in bytes"`
	DefaultJobTimeout time.Duration `envconfig:"DEFAULT_JOB_TIMEOUT" default:"30m" desc:"a job's timeout when it names none"`
	MaxJobTimeout     time.Duration `envconfig:"MAX_JOB_TIMEOUT" default:"24h" desc:"longest timeout a job may ask for"`

	MaxAttempts      int           `envconfig:"MAX_ATTEMPTS" default:"3" desc:"times a job is handed out before losing its worker fails it"`
	ReapInterval     time.Duration `envconfig:"REAP_INTERVAL" default:"5s" desc:"how often expired worker leases are looked for"`
	TokenGrace       time.Duration `envconfig:"TOKEN_GRACE" default:"30s" desc:"how long a ready job may go unclaimed while its target has fewer queued dispatch tokens than ready jobs before the reaper issues one more (a worker lost after taking a token, before claiming)"`
	WatchdogInterval time.Duration `envconfig:"WATCHDOG_INTERVAL" default:"1m" desc:"how often the watchdog runs"`
	StallAfter       time.Duration `envconfig:"STALL_AFTER" default:"10m" desc:"how long a group may make no progress with nothing running before the watchdog cancels it"`
	ReportWorkers    int           `envconfig:"REPORT_WORKERS" default:"8" desc:"concurrent workers of the build_scheduler queue: the watchdog and reports that come through the queue (build-workers apply their own)"`
}

func main() {
	var cfg Config
	service.Main(queue.BuildScheduler.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// Check lists every problem of the configuration that can be seen without the network; the
// service refuses to start with any (service.Main), and `build-scheduler check-config` prints them.
func (c Config) Check() []error {
	var errs []error
	if err := service.CheckListenAddr("BUILD_SCHEDULER_HTTP_ADDR", c.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	if err := c.submit().Check(); err != nil {
		errs = append(errs, fmt.Errorf("BUILD_SCHEDULER_* job limits: %w", err))
	}
	if err := logstore.Check(c.Config); err != nil {
		errs = append(errs, fmt.Errorf("log store: %w", err))
	}
	if c.ReportWorkers < 1 {
		errs = append(errs, fmt.Errorf("BUILD_SCHEDULER_REPORT_WORKERS: %d, want at least 1", c.ReportWorkers))
	}
	return errs
}

func (c Config) submit() api.Submit {
	return api.Submit{Limits: dag.Limits{
		MaxJobs: c.MaxJobsPerGroup, MaxDeps: c.MaxDepsPerJob, MaxJobBytes: c.MaxJobBytes,
		DefaultTimeout: c.DefaultJobTimeout, MaxTimeout: c.MaxJobTimeout,
	}, MaxAttempts: c.MaxAttempts}
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
		Queues:   map[string]int{queue.QueueBuildScheduler: cfg.ReportWorkers},
		OpenAPI:  api.OpenAPI,
		// As every client of the schema: see buildworker.RescueAfter.
		JobTimeout:           buildworker.RescueAfter(cfg.MaxJobTimeout, 0),
		RescueStuckJobsAfter: buildworker.RescueAfter(cfg.MaxJobTimeout, 0),
	}
	return service.Run(ctx, spec, stdout, func(d *service.Deps) error {
		logs, err := logstore.Open(cfg.Config, d.Pool)
		if err != nil {
			return err
		}
		graph := &jobgraph.Graph{Tokens: d.Inserters[queue.BuildScheduler]}
		// The scheduler works no build queue; it registers the build worker only so that its
		// River leader knows the kind and its Timeout (see package work).
		build := &buildworker.Worker{Pool: d.Pool, Graph: graph, Logs: logs, Lease: time.Minute, Logger: d.Logger, MaxJobTimeout: cfg.MaxJobTimeout}
		m := work.NewMetrics(d.Server.Metrics, d.Logger)
		d.Gauges(work.Gauges...)
		settings := work.Settings{WatchdogInterval: cfg.WatchdogInterval, StallAfter: cfg.StallAfter, Metrics: m, Logger: d.Logger}
		d.PeriodicJobs = append(d.PeriodicJobs, settings.Register(d.Workers, d.Pool, graph, build)...)
		if _, err := d.NewClient(); err != nil {
			return err
		}
		api.Routes(d.Server.API, d.Pool, graph, logs, submit, d.Backlog)
		reaper := &work.Reaper{Pool: d.Pool, Graph: graph, Interval: cfg.ReapInterval, TokenGrace: cfg.TokenGrace, Logger: d.Logger, Metrics: m}
		d.Go(reaper.Run)
		return nil
	})
}
