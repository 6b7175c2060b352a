package buildworker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/config"
	"drover.dev/shared/service"
)

// Config is the build-worker's configuration, read from BUILD_WORKER_* environment variables.
type Config struct {
	config.Common
	logstore.Config // must name the scheduler's store

	HTTPAddr string   `envconfig:"HTTP_ADDR" default:":8094" desc:"HTTP listen address (health, readiness, metrics)"`
	Targets  []string `envconfig:"TARGETS" required:"true" desc:"targets whose build queues this worker serves, comma separated"`
	Slots    int      `envconfig:"SLOTS" default:"2" desc:"builds run at once, per target"`
	// River's default cooldown (100ms) would cap each target at one fetch, so SLOTS jobs, per
	// 100ms. The River jobs this worker's reports insert are announced after commit (see report).
	FetchCooldown     time.Duration `envconfig:"FETCH_COOLDOWN" default:"5ms" desc:"shortest time between two fetches of a target's builds (River's FetchCooldown)"`
	FetchPollInterval time.Duration `envconfig:"FETCH_POLL_INTERVAL" default:"1s" desc:"how often a target's queue is polled for builds when no notification came (River's FetchPollInterval)"`
	// Only what a crash of Postgres may lose without harm commits asynchronously: see
	// SynchronousCommitValues and the package documentation.
	SynchronousCommit string        `envconfig:"SYNCHRONOUS_COMMIT" default:"off" desc:"synchronous_commit of the worker's connections: River's fetches and completions, the running marks, log chunks (off: they do not wait for the WAL flush); a build's report (of a build of DURABLE_AFTER or longer) commits with synchronous_commit on whatever this says"`
	DurableAfter      time.Duration `envconfig:"DURABLE_AFTER" default:"1s" desc:"shortest build whose report waits for the WAL flush; a shorter one's report commits asynchronously, and a crash of Postgres itself within the WAL writer's delay runs such a build again as a new attempt (0: every report waits)"`
	MaxJobTimeout     time.Duration `envconfig:"MAX_JOB_TIMEOUT" default:"24h" desc:"longest build this worker runs, a job asking for more being cut at it: keep it at least the scheduler's BUILD_SCHEDULER_MAX_JOB_TIMEOUT"`
	Slack             time.Duration `envconfig:"SLACK" default:"1m" desc:"how long a build's River job may take beyond the build (last log chunks, report): River's timeout of a build_run is the build's timeout plus this"`
	AnnounceInterval  time.Duration `envconfig:"ANNOUNCE_INTERVAL" default:"10ms" desc:"least time between two notifications of the River jobs this worker's reports inserted (those of a busier stretch go out together): each wakes every worker of the target, which a busy queue does not need"`
	MarkPeriod        time.Duration `envconfig:"MARK_PERIOD" default:"100ms" desc:"how often the builds that have run that long are recorded running, in one statement for all"`
	// The watchdog settings matter only when this worker's River client is the leader and
	// enqueues the watchdog; the scheduler's settings decide what a pass does.
	WatchdogInterval time.Duration `envconfig:"WATCHDOG_INTERVAL" default:"1m" desc:"how often the leader enqueues the scheduler's watchdog"`
}

// SynchronousCommitValues are Postgres's values of synchronous_commit.
var SynchronousCommitValues = []string{"on", "off", "local", "remote_write", "remote_apply"}

// Check lists every problem of the configuration that can be seen without the network; the
// worker refuses to start with any (service.Main), and `build-worker check-config` prints them.
func (c Config) Check() []error {
	var errs []error
	if err := service.CheckListenAddr("BUILD_WORKER_HTTP_ADDR", c.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	for _, t := range c.Targets {
		if !dag.ValidTarget(t) {
			errs = append(errs, fmt.Errorf("BUILD_WORKER_TARGETS: %q is not a target (lowercase letters and digits separated by single '_' or '-')", t))
		}
	}
	if c.Slots < 1 {
		errs = append(errs, fmt.Errorf("BUILD_WORKER_SLOTS: %d, want at least 1", c.Slots))
	}
	if c.MaxJobTimeout < time.Second {
		errs = append(errs, fmt.Errorf("BUILD_WORKER_MAX_JOB_TIMEOUT: %s, want 1s or more", c.MaxJobTimeout))
	}
	if !slices.Contains(SynchronousCommitValues, c.SynchronousCommit) {
		errs = append(errs, fmt.Errorf("BUILD_WORKER_SYNCHRONOUS_COMMIT: %q, want one of %s", c.SynchronousCommit, strings.Join(SynchronousCommitValues, ", ")))
	}
	if c.Slack < time.Second {
		errs = append(errs, fmt.Errorf("BUILD_WORKER_SLACK: %s, want 1s or more", c.Slack))
	}
	if c.MarkPeriod < time.Millisecond {
		errs = append(errs, fmt.Errorf("BUILD_WORKER_MARK_PERIOD: %s, want 1ms or more", c.MarkPeriod))
	}
	if c.DurableAfter < 0 {
		errs = append(errs, fmt.Errorf("BUILD_WORKER_DURABLE_AFTER: %s, want 0 or more", c.DurableAfter))
	}
	if c.WatchdogInterval <= 0 {
		errs = append(errs, fmt.Errorf("BUILD_WORKER_WATCHDOG_INTERVAL: %s, want a positive duration", c.WatchdogInterval))
	}
	if err := logstore.Check(c.Config); err != nil {
		errs = append(errs, fmt.Errorf("log store: %w", err))
	}
	return errs
}

// Kinds adds to a River client of the build_scheduler schema the kinds and periodic jobs every
// client there registers (so that whichever client River elects leader rescues and enqueues
// correctly), given this worker's build_run worker. The command passes the scheduler's
// registration; this package does not know the scheduler's workers.
type Kinds func(workers *river.Workers, pool *pgxpool.Pool, graph *jobgraph.Graph, build river.Worker[queue.BuildRunArgs]) []*river.PeriodicJob

// Run works the configured targets until ctx ends; the build-worker command is this function.
// It listens on ln, or on cfg.HTTPAddr when ln is nil.
func Run(ctx context.Context, cfg Config, kinds Kinds, ln net.Listener, stdout io.Writer) error {
	if len(cfg.Targets) == 0 || cfg.Slots < 1 || cfg.MarkPeriod <= 0 {
		return errors.New("need at least one target, one slot and a mark period")
	}
	queues := map[string]int{}
	for _, t := range cfg.Targets {
		queues[queue.BuildQueue(t)] = cfg.Slots
	}
	spec := service.Spec{
		Service: queue.BuildScheduler, Name: "build-worker", Config: cfg.Common, Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr, Listener: ln, Queues: queues,
		Fetch: queue.Fetch{Cooldown: cfg.FetchCooldown, PollInterval: cfg.FetchPollInterval},
	}
	spec.JobTimeout = jobgraph.StepTimeout
	spec.RescueStuckJobsAfter = jobgraph.StepTimeout
	if cfg.SynchronousCommit != "" {
		spec.DBParams = map[string]string{"synchronous_commit": cfg.SynchronousCommit}
	}
	id := cfg.WorkerID
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("build-worker-%s-%d", host, os.Getpid())
	}
	var build *Worker
	defer func() {
		if build != nil {
			build.Close()
		}
	}()
	return service.Run(ctx, spec, stdout, func(d *service.Deps) error {
		logs, err := logstore.Open(cfg.Config, d.Pool)
		if err != nil {
			return err
		}
		// The worker announces the River jobs its reports insert after they commit (see report).
		quiet, err := queue.NewQuietInserter(d.Pool, queue.BuildScheduler)
		if err != nil {
			return err
		}
		graph := &jobgraph.Graph{Builds: quiet}
		announcer := queue.NewAnnouncer(d.Pool, queue.BuildScheduler, d.Logger)
		announcer.Interval = cfg.AnnounceInterval
		d.Go(announcer.Run)
		marker := &Marker{Pool: d.Pool, Period: cfg.MarkPeriod, Logger: d.Logger}
		d.Go(marker.Run)
		build = &Worker{
			Pool: d.Pool, Graph: graph, Logs: logs, Announcer: announcer, Marker: marker,
			ID: id, Logger: d.Logger, Metrics: NewMetrics(d.Server.Metrics, cfg.Targets, d.Logger),
			MaxJobTimeout: cfg.MaxJobTimeout, Slack: cfg.Slack, DurableAfter: cfg.DurableAfter,
		}
		// A sweep inserts the new attempts of a dead worker's builds with River's own
		// notification, as no announcer follows its commit.
		maintenance := &jobgraph.Graph{Builds: d.Inserters[queue.BuildScheduler]}
		d.Takeovers = map[string]queue.Takeover{(queue.BuildRunArgs{}).Kind(): maintenance.Takeover}
		d.PeriodicJobs = append(d.PeriodicJobs, kinds(d.Workers, d.Pool, maintenance, build)...)
		if _, err := d.NewClient(); err != nil {
			return err
		}
		d.Go(func(ctx context.Context) error { return announce(ctx, d, id, cfg) })
		return nil
	})
}

// announce records every announcePeriod that this worker serves its targets, so the scheduler's
// watchdog can tell a target nobody serves from a busy one.
func announce(ctx context.Context, d *service.Deps, id string, cfg Config) error {
	tick := time.NewTicker(announcePeriod)
	defer tick.Stop()
	for {
		if err := jobgraph.SeeWorker(ctx, d.Pool, id, cfg.Targets); err != nil && ctx.Err() == nil {
			d.Logger.WarnContext(ctx, "announce worker", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// announcePeriod is how often a worker records that it serves its targets: well within the
// watchdog's STALL_AFTER.
const announcePeriod = 10 * time.Second
