package main

import (
	"fmt"
	"time"

	"drover.dev/services/build-scheduler/internal/api"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/logstore"
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
	TokenSlack        time.Duration `envconfig:"TOKEN_SLACK" default:"1m" desc:"how long a build_run token may take beyond its build (claim, last log chunks, report): River's timeout of a token is MAX_JOB_TIMEOUT plus this; keep it the build-workers' BUILD_WORKER_TOKEN_SLACK"`

	MaxAttempts      int           `envconfig:"MAX_ATTEMPTS" default:"3" desc:"times a job is handed out before losing its worker fails it"`
	ReapInterval     time.Duration `envconfig:"REAP_INTERVAL" default:"5s" desc:"how often expired worker leases are looked for"`
	TokenGrace       time.Duration `envconfig:"TOKEN_GRACE" default:"30s" desc:"how long a ready job may go unclaimed while its target has fewer queued dispatch tokens than ready jobs before the reaper issues one more (a worker lost after taking a token, before claiming)"`
	WatchdogInterval time.Duration `envconfig:"WATCHDOG_INTERVAL" default:"1m" desc:"how often the watchdog runs"`
	StallAfter       time.Duration `envconfig:"STALL_AFTER" default:"10m" desc:"how long a group may make no progress with nothing running before the watchdog cancels it"`
	ReportWorkers    int           `envconfig:"REPORT_WORKERS" default:"8" desc:"concurrent workers of the build_scheduler queue: the watchdog and reports that come through the queue (build-workers apply their own)"`
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
	if c.TokenSlack < time.Second {
		errs = append(errs, fmt.Errorf("BUILD_SCHEDULER_TOKEN_SLACK: %s, want 1s or more", c.TokenSlack))
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
