package populate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/queue"
)

// Config is what a service decides about populating.
type Config struct {
	// MinSchedulingInterval is DataJoint's min_scheduling_interval: schedule_jobs for a table does
	// nothing when the last scheduling event, by the database clock, is more recent than this.
	// Every key_source is an expensive query, and a thousand workers must not all run it at once
	// (DataJoint #749). Zero or less schedules whatever the last event.
	MinSchedulingInterval time.Duration

	// OrphanTimeout is the reservation lease. A worker renews its reservations while make runs; a
	// reservation whose lease expired, or whose database connection is gone (a killed process),
	// is returned to scheduled by the orphan sweep. Must be positive.
	OrphanTimeout time.Duration

	// FeedAhead is how many populate_make jobs of a table the feeder keeps waiting in River
	// (enqueued, not yet running); it enqueues more as they drain. Must be positive.
	FeedAhead int

	// FeedEvery is how soon a feeder that stopped at FeedAhead looks again. Must be positive.
	FeedEvery time.Duration

	// RescheduleGrace is how long the background make of a rescheduled key waits in River
	// (scheduled) before it runs, so that a populate run started after the reschedule makes the
	// key and shows its outcome; zero runs it at once.
	RescheduleGrace time.Duration

	// KeepSuccess keeps a completed job as status success with its run_duration instead of
	// deleting it.
	KeepSuccess bool

	// WorkerID names this process in run_metadata; host and pid when empty.
	WorkerID string

	// HTTPClient calls HTTP function makes; a client with a 5-minute timeout when nil.
	HTTPClient *http.Client
	// Getenv reads the process's environment, where a table's function_secret_env must be set;
	// os.Getenv when nil.
	Getenv func(string) string
	// Metrics counts makes, runs and reclaims; nil counts nothing.
	Metrics *Metrics
}

// Engine populates the computed tables of a registry. It is safe for concurrent use by any
// number of goroutines, processes and replicas: the jobs table is the only shared state.
type Engine struct {
	pool   *pgxpool.Pool
	river  *queue.Client
	tables *Registry
	// tablesMu serialises reading stored definitions and registering them, so that a stale read
	// (a lookup of a table that a notification then retires) never lands after a newer one.
	tablesMu sync.Mutex
	cfg      Config
	host     string
	version  string
	stopping atomic.Bool
	watch    runWatch
	// lostSweptAt is when giveBackLost last ran (Unix nanoseconds; zero: never).
	lostSweptAt atomic.Int64
}

// NewEngine returns an engine on pool (search_path on the populate_worker schema) that inserts
// make jobs through river, an insert-only client on the same schema. cfg's values are taken as
// they are: the service's defaults live in its environment configuration.
func NewEngine(pool *pgxpool.Pool, river *queue.Client, tables *Registry, cfg Config) *Engine {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 5 * time.Minute}
	}
	host, _ := os.Hostname()
	if cfg.WorkerID == "" {
		cfg.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return &Engine{pool: pool, river: river, tables: tables, cfg: cfg, host: host, version: buildVersion()}
}

// Tables returns the engine's registry.
func (e *Engine) Tables() *Registry { return e.tables }

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// SetStopping tells the engine the process received SIGTERM: a make cancelled from now on is
// recorded as an error saying so instead of as a plain cancellation.
func (e *Engine) SetStopping() { e.stopping.Store(true) }

// buildVersion is the code version recorded in run_metadata: the VCS revision when the binary
// carries one, else the module version.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return info.Main.Version
}

// Pool returns the engine's pool, for read-only queries of the jobs table.
func (e *Engine) Pool() *pgxpool.Pool { return e.pool }

// errRunCancelled is the cause of a make's context when its run was cancelled.
var errRunCancelled = errors.New("populate run cancelled")

// runWatch is what this process knows of the runs whose makes it runs: each make's cancel
// function by run, so that a cancelled run's makes are cut off here.
type runWatch struct {
	mu    sync.Mutex
	makes map[int64]map[*context.CancelCauseFunc]struct{}
}

// watch registers a make of run; the returned function unregisters it.
func (w *runWatch) watch(run int64, cancel context.CancelCauseFunc) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.makes == nil {
		w.makes = map[int64]map[*context.CancelCauseFunc]struct{}{}
	}
	if w.makes[run] == nil {
		w.makes[run] = map[*context.CancelCauseFunc]struct{}{}
	}
	key := &cancel
	w.makes[run][key] = struct{}{}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.makes[run], key)
		if len(w.makes[run]) == 0 {
			delete(w.makes, run)
		}
	}
}

func (w *runWatch) runs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]int64, 0, len(w.makes))
	for id := range w.makes {
		ids = append(ids, id)
	}
	return ids
}

func (w *runWatch) cancel(run int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.makes[run] {
		(*c)(errRunCancelled)
	}
}
