package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/api"
	"drover.dev/services/populate-worker/internal/examples"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/signing"
	"drover.dev/shared/config"
	"drover.dev/shared/service"
)

// Config is the populate-worker's configuration, read from POPULATE_WORKER_* environment variables.
type Config struct {
	config.Common
	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8085" desc:"HTTP listen address"`

	MinSchedulingInterval time.Duration `envconfig:"MIN_SCHEDULING_INTERVAL" default:"5s" desc:"schedule_jobs of a table runs at most once per interval (database clock); 0 schedules whatever the last event, as DataJoint's min_scheduling_interval=0"`
	OrphanTimeout         time.Duration `envconfig:"ORPHAN_TIMEOUT" default:"2m" desc:"reservation lease: a reserved job not renewed for this long is scheduled again"`
	ReclaimEvery          time.Duration `envconfig:"RECLAIM_EVERY" default:"10s" desc:"how often dead or expired reservations are looked for"`
	ListenFlushEvery      time.Duration `envconfig:"LISTEN_FLUSH_EVERY" default:"200ms" desc:"how long upstream change notifications gather before their schedule jobs are enqueued"`
	FeedAhead             int           `envconfig:"FEED_AHEAD" default:"5000" desc:"populate_make jobs of a table the feeder keeps waiting in River; it enqueues the rest of the scheduled keys' makes as these drain"`
	FeedEvery             time.Duration `envconfig:"FEED_EVERY" default:"500ms" desc:"how soon a feeder that reached FEED_AHEAD looks again"`
	KeepSuccess           bool          `envconfig:"KEEP_SUCCESS" default:"false" desc:"keep completed jobs as status success with run_duration instead of deleting them"`
	MakeWorkers           int           `envconfig:"MAKE_WORKERS" default:"11" desc:"concurrent makes on this replica (queue populate): a populate run's makes go before the background makes of scheduled keys (River priority); MAKE_WORKERS + 3 must fit DB_MAX_CONNS (check-config says so): a make holds a connection and takes a second to finish"`
	RescheduleGrace       time.Duration `envconfig:"RESCHEDULE_GRACE" default:"10s" desc:"how long the background make of a rescheduled key waits (a scheduled River job) before it runs, so that a populate run started meanwhile makes the key and shows its outcome; 0 makes it at once"`
	FeedOff               bool          `envconfig:"FEED_OFF" default:"false" desc:"this replica does not work the feeder's queue (populate_feed), so the background makes of scheduled keys are not enqueued here; with it on every replica only populate runs, reschedules and reclaims enqueue makes"`
	RunWatchEvery         time.Duration `envconfig:"RUN_WATCH_EVERY" default:"250ms" desc:"how often running makes of populate runs look whether their run was cancelled"`
	MakeTimeout           time.Duration `envconfig:"MAKE_TIMEOUT" default:"1h" desc:"longest a single make may run; River rescues a make job of a dead replica within MAKE_TIMEOUT + 45 s"`
	MaintenanceTimeout    time.Duration `envconfig:"MAINTENANCE_TIMEOUT" default:"10m" desc:"longest a populate_schedule or populate_cleanup job may run (schedule_jobs or cleanup_jobs of every table it names); River rescues one of a dead replica within MAINTENANCE_TIMEOUT + 30 s"`
	FeedTimeout           time.Duration `envconfig:"FEED_TIMEOUT" default:"1m" desc:"longest one pass of the feeder (a populate_feed job) may run; River rescues one of a dead replica within FEED_TIMEOUT + 30 s"`
	ScheduleEvery         time.Duration `envconfig:"SCHEDULE_EVERY" default:"1m" desc:"periodic schedule_jobs of every table, besides the event-driven one"`
	CleanupEvery          time.Duration `envconfig:"CLEANUP_EVERY" default:"24h" desc:"periodic cleanup_jobs of every table, besides the event-driven one"`
	TablesFile            string        `envconfig:"TABLES_FILE" desc:"JSON file of computed tables with HTTP function makes, written into the stored definitions at start (a table changed or retired over the API since keeps the API's)"`
	AdminTokens           []string      `envconfig:"ADMIN_TOKENS" secret:"true" desc:"bearer tokens of the admin scope, comma separated: they alone may define and retire computed tables (PUT and DELETE /v1/tables/{name}), which API_TOKENS may not; a token listed in both has both scopes"`
	Examples              bool          `envconfig:"EXAMPLES" default:"true" desc:"register the example pipelines and serve their HTTP function"`
	ExamplesFunctionURL   string        `envconfig:"EXAMPLES_FUNCTION_URL" desc:"URL of the example energy function; this service's own when empty"`
	ExamplesSeed          bool          `envconfig:"EXAMPLES_SEED" default:"false" desc:"serve POST /v1/examples/seed, which inserts example upstream rows (demo only)"`
	FunctionSecret        []string      `envconfig:"FUNCTION_SECRET" secret:"true" desc:"secret shared with the HTTP function makes: every call is signed with it (Drover-Signature header, HMAC-SHA256 of time and body) and the example function refuses unsigned calls; comma separated to sign with several while rotating; a table of TABLES_FILE may name its own variable (function_secret_env); empty: calls go unsigned (a warning at start), which the Python library's serve refuses"`
}

// poolHeadroom is what the pool needs beyond a connection per make: every make (MAKE_WORKERS of
// them at once) holds its reserving connection while it runs and takes a second for its
// finishing transaction, and the change listener and the process's liveness (its renewals and
// sweeps, queue.Process) hold one each for good. With less, every make could hold its first and
// wait for its second for good; with it, one always gets its second, finishes and gives both
// back. River's own statements take a connection only for a moment.
const poolHeadroom = 3

// rescueAfter is River's RescueStuckJobsAfter and JobTimeout: the shortest timeout of any kind
// the service works (a make's is MAKE_TIMEOUT and its recording grace; a kind without its own,
// the probe, gets JobTimeout, at most River's default minute). River's rescuer, every 30 s, takes
// back a job that has run longer than both RescueStuckJobsAfter and its kind's timeout; with
// RescueStuckJobsAfter no longer than any kind's timeout, a dead replica's job of every kind is
// back within its own timeout plus 30 s.
func (c Config) rescueAfter() time.Duration {
	return min(c.MakeTimeout, c.MaintenanceTimeout, c.FeedTimeout, time.Minute)
}

// Check lists every problem of the configuration that can be seen without the network (the
// tables file is read and its tables checked, not against the database); the service refuses to
// start with any (service.Main), and `populate-worker check-config` prints them.
func (c Config) Check() []error {
	var errs []error
	if err := service.CheckListenAddr("POPULATE_WORKER_HTTP_ADDR", c.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	if c.MakeWorkers < 0 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_MAKE_WORKERS: %d, want 0 or more", c.MakeWorkers))
	}
	if c.FeedAhead < 1 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_FEED_AHEAD: %d, want 1 or more", c.FeedAhead))
	}
	if c.RescheduleGrace < 0 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_RESCHEDULE_GRACE: %s, want 0 (make a rescheduled key at once) or more", c.RescheduleGrace))
	}
	if c.MinSchedulingInterval < 0 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_MIN_SCHEDULING_INTERVAL: %s, want 0 (schedule whatever the last event) or more", c.MinSchedulingInterval))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ORPHAN_TIMEOUT", c.OrphanTimeout}, {"RECLAIM_EVERY", c.ReclaimEvery}, {"LISTEN_FLUSH_EVERY", c.ListenFlushEvery},
		{"FEED_EVERY", c.FeedEvery}, {"RUN_WATCH_EVERY", c.RunWatchEvery}, {"MAKE_TIMEOUT", c.MakeTimeout},
		{"MAINTENANCE_TIMEOUT", c.MaintenanceTimeout}, {"FEED_TIMEOUT", c.FeedTimeout},
		{"SCHEDULE_EVERY", c.ScheduleEvery}, {"CLEANUP_EVERY", c.CleanupEvery},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("POPULATE_WORKER_%s: %s, want more than zero", d.name, d.v))
		}
	}
	if pool, need := c.PoolSize(queue.PopulateWorker.EnvPrefix()), c.MakeWorkers+poolHeadroom; pool > 0 && int(pool) < need {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_DB_MAX_CONNS %d is too small for POPULATE_WORKER_MAKE_WORKERS %d: "+
			"at least MAKE_WORKERS + %d = %d (a connection held by every make, two listeners and a make's second connection)",
			pool, c.MakeWorkers, poolHeadroom, need))
	}
	if slices.Contains(c.AdminTokens, "") {
		errs = append(errs, errors.New("POPULATE_WORKER_ADMIN_TOKENS (or ADMIN_TOKENS): an empty token (two commas, or a trailing one)"))
	}
	if _, err := api.OpenAPI(c.Examples, c.ExamplesSeed); err != nil {
		errs = append(errs, err)
	}
	if reg, err := registry(c, "http://127.0.0.1/examples/functions/energy"); err != nil {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_TABLES_FILE or _EXAMPLES_FUNCTION_URL: %w", err))
	} else if _, _, err := functionKeys(reg, c.FunctionSecret, os.Getenv); err != nil {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_TABLES_FILE: %w", err))
	}
	return errs
}

// registry builds the tables from code (the examples) and from the tables file. ownFunction is
// the URL of this service's example function, used when EXAMPLES_FUNCTION_URL is empty.
func registry(cfg Config, ownFunction string) (*populate.Registry, error) {
	reg := populate.NewRegistry()
	if cfg.Examples {
		url := cfg.ExamplesFunctionURL
		if url == "" {
			url = ownFunction
		}
		if err := examples.Register(reg, url); err != nil {
			return nil, err
		}
	}
	if cfg.TablesFile != "" {
		if err := reg.LoadFile(cfg.TablesFile); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// functionKeys says which secrets sign the calls to each function make: those in the variable a
// table's function_secret_env names, else FUNCTION_SECRET (service). It lists the function tables
// whose calls go unsigned (neither is set), and fails when a table's variable is unset or two
// tables call one URL with different secrets. The keys follow reg: a table defined or changed
// over the API while the service runs is signed as its definition says.
func functionKeys(reg *populate.Registry, service []string, getenv func(string) string) (signing.Keys, []string, error) {
	byURL, unsigned, err := secretsByURL(reg.All(), service, getenv)
	var mu sync.Mutex
	version := reg.Version()
	keys := func(req *http.Request) []string {
		mu.Lock()
		defer mu.Unlock()
		if v := reg.Version(); v != version {
			version = v // read before the tables, so that a change made meanwhile is seen next time
			byURL, _, _ = secretsByURL(reg.All(), service, getenv)
		}
		if s, ok := byURL[req.URL.String()]; ok {
			return s
		}
		return service
	}
	return keys, unsigned, err
}

// secretsByURL is functionKeys over tables: the secrets of each function URL, the unsigned
// tables and the problems.
func secretsByURL(tables []*populate.Table, service []string, getenv func(string) string) (map[string][]string, []string, error) {
	byURL := map[string][]string{}
	var unsigned []string
	var errs []error
	for _, t := range tables {
		if t.FunctionURL == "" {
			continue
		}
		secrets := service
		if t.FunctionSecretEnv != "" {
			secrets = splitSecrets(getenv(t.FunctionSecretEnv))
			if len(secrets) == 0 {
				errs = append(errs, fmt.Errorf("table %s: %s, its function_secret_env, is not set", t.Name, t.FunctionSecretEnv))
				continue
			}
		}
		if len(secrets) == 0 {
			unsigned = append(unsigned, t.Name)
		}
		u, err := url.Parse(t.FunctionURL)
		if err != nil {
			errs = append(errs, fmt.Errorf("table %s: function_url: %w", t.Name, err))
			continue
		}
		if prev, ok := byURL[u.String()]; ok && !slices.Equal(prev, secrets) {
			errs = append(errs, fmt.Errorf("table %s: function_url %s is another table's, with another secret", t.Name, t.FunctionURL))
		}
		byURL[u.String()] = secrets
	}
	return byURL, unsigned, errors.Join(errs...)
}

// splitSecrets reads a comma-separated list of secrets, as FUNCTION_SECRET is read.
func splitSecrets(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
