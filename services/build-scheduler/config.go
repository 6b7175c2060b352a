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
	Slack             time.Duration `envconfig:"SLACK" default:"1m" desc:"how long a build's River job may take beyond the build (last log chunks, report); keep it the build-workers' BUILD_WORKER_SLACK"`

	MaxAttempts      int           `envconfig:"MAX_ATTEMPTS" default:"3" desc:"attempts a job gets when its worker is lost (it dies, loses its liveness or shuts down mid-build) before it fails"`
	ReapInterval     time.Duration `envconfig:"REAP_INTERVAL" default:"5s" desc:"how often builds whose River job ended without a report, or was cancelled or deleted in River UI before it ran, are looked for"`
	WatchdogInterval time.Duration `envconfig:"WATCHDOG_INTERVAL" default:"1m" desc:"how often the watchdog runs"`
	StallAfter       time.Duration `envconfig:"STALL_AFTER" default:"10m" desc:"how long a group may make no progress with nothing running before the watchdog cancels it"`
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
	if c.Slack < time.Second {
		errs = append(errs, fmt.Errorf("BUILD_SCHEDULER_SLACK: %s, want 1s or more", c.Slack))
	}
	if c.ReapInterval <= 0 {
		errs = append(errs, fmt.Errorf("BUILD_SCHEDULER_REAP_INTERVAL: %s, want a positive duration", c.ReapInterval))
	}
	return errs
}

func (c Config) submit() api.Submit {
	return api.Submit{Limits: dag.Limits{
		MaxJobs: c.MaxJobsPerGroup, MaxDeps: c.MaxDepsPerJob, MaxJobBytes: c.MaxJobBytes,
		DefaultTimeout: c.DefaultJobTimeout, MaxTimeout: c.MaxJobTimeout,
	}, MaxAttempts: c.MaxAttempts}
}
