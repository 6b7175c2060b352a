package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/work"
	"drover.dev/shared/config"
	"drover.dev/shared/service"
)

// The end-to-end figures run the populate-worker in this process the way its main.go and
// wire.go run it: service.Run (its pool, inserters, liveness and River client), the engine on
// the service's pool and inserter, work.Register's workers and Deps.NewClient. The service's
// package is a main package and cannot be imported, so what main.go and wire.go decide is
// repeated here, each piece saying where it comes from.

// workerSettings are the populate-worker settings the bench runs the service with besides
// MAKE_WORKERS and FEED_OFF: fields of its Config (config.go) with the same names and default
// tags, filled by config.Defaults as the service fills them when their variables are unset.
// TestWorkerSettingsAreTheServiceDefaults holds the tags equal to config.go's.
type workerSettings struct {
	MinSchedulingInterval time.Duration `default:"5s"`
	OrphanTimeout         time.Duration `default:"2m"`
	ReclaimEvery          time.Duration `default:"10s"`
	ListenFlushEvery      time.Duration `default:"200ms"`
	FeedAhead             int           `default:"5000"`
	FeedEvery             time.Duration `default:"500ms"`
	KeepSuccess           bool          `default:"false"`
	RescheduleGrace       time.Duration `default:"10s"`
	RunWatchEvery         time.Duration `default:"250ms"`
	MakeTimeout           time.Duration `default:"1h"`
	MaintenanceTimeout    time.Duration `default:"10m"`
	FeedTimeout           time.Duration `default:"1m"`
	ScheduleEvery         time.Duration `default:"1m"`
	CleanupEvery          time.Duration `default:"24h"`
}

// rescueAfter is config.go's rescueAfter: River's JobTimeout and RescueStuckJobsAfter.
func (s workerSettings) rescueAfter() time.Duration {
	return min(s.MakeTimeout, s.MaintenanceTimeout, s.FeedTimeout, time.Minute)
}

// poolHeadroom is config.go's: what the pool needs beyond a connection per make.
const poolHeadroom = 3

// shape is what a figure sets of the service: its make workers and whether it feeds.
type shape struct {
	makeWorkers int
	feedOff     bool
}

// queues are the River queues main.go's run works for s.
func (s shape) queues() map[string]int {
	q := map[string]int{queue.QueuePopulateMaintenance: 1}
	if !s.feedOff {
		q[queue.QueuePopulateFeed] = 1
	}
	if s.makeWorkers > 0 {
		q[queue.QueuePopulate] = s.makeWorkers
	}
	return q
}

// poolSize is the pool a deployment with s's MAKE_WORKERS has: the service's share of the
// connection budget (DB_MAX_CONNS unset), or the least check-config accepts when that is too
// small.
func (s shape) poolSize() int32 {
	return max(config.DBBudget["POPULATE_WORKER"], int32(s.makeWorkers+poolHeadroom))
}

// runningWorker is a populate-worker, or River's floor on the same wiring, running in this
// process.
type runningWorker struct {
	ins  *queue.Client // the service's inserter for its own queues
	stop func() error
}

// startWorker runs the service on dbURL shaped by sh, with wire registering its workers and
// building its River client (Deps.NewClient), and returns once River has started.
func startWorker(ctx context.Context, dbURL string, sh shape, s workerSettings, wire func(*service.Deps) error) (*runningWorker, error) {
	var common config.Common
	if err := config.Defaults(&common); err != nil {
		return nil, err
	}
	common.DatabaseURL, common.DBMaxConns = dbURL, sh.poolSize()
	common.LogLevel, common.LogFormat = "warn", "text" // the bench's output is its figures
	common.APITokens = []string{"populate-bench"}      // the service refuses to start without one; nothing calls it
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	spec := service.Spec{
		Service: queue.PopulateWorker, Config: common, Settings: &common, Listener: ln, Queues: sh.queues(),
		JobTimeout: s.rescueAfter(), RescueStuckJobsAfter: s.rescueAfter(),
	}
	// The service stops when the bench says so, not when ctx (Ctrl-C) ends: stop then shuts it
	// down in order, as SIGTERM does.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &runningWorker{}
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- service.Run(runCtx, spec, os.Stderr, func(deps *service.Deps) error {
			w.ins = deps.Inserters[queue.PopulateWorker]
			if err := wire(deps); err != nil {
				return err
			}
			// Background loops start once River has.
			deps.Go(func(ctx context.Context) error { close(ready); <-ctx.Done(); return nil })
			return nil
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("it returned no error")
		}
		return nil, fmt.Errorf("populate-worker stopped while starting: %w", err)
	case <-ctx.Done():
		cancel()
		return nil, errors.Join(ctx.Err(), <-done)
	}
	w.stop = func() error { cancel(); return <-done }
	// Let River's LISTEN, its leader election and the loops' first passes settle, so that the
	// measurement does not start with a missed notification (a 1 s poll) or a start-up pass.
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), w.stop())
	}
	return w, nil
}

const settle = 500 * time.Millisecond

// wireMakes is wire.go's wiring of what makes keys, for the tables of reg: the registry checked
// against the database, the engine on the service's pool and inserter with its metrics, its
// tables started and their triggers installed, work.Register's workers, the River client, and
// the loops beside it (run watch, change listener, reclaim). Left out: the routes and gauges
// (nothing calls them here), function signing (no HTTP makes), and work.Register's periodic
// schedule and cleanup, whose schedule runs at start and would schedule the bench's keys before
// its clock starts. The engine is stored in *engine.
func wireMakes(ctx context.Context, reg *populate.Registry, s workerSettings, engine **populate.Engine) func(*service.Deps) error {
	return func(deps *service.Deps) error {
		if err := reg.Check(ctx, deps.Pool); err != nil {
			return err
		}
		var tables []string
		for _, t := range reg.All() {
			tables = append(tables, t.Name)
		}
		e := populate.NewEngine(deps.Pool, deps.Inserters[queue.PopulateWorker], reg, populate.Config{
			MinSchedulingInterval: s.MinSchedulingInterval, OrphanTimeout: s.OrphanTimeout,
			KeepSuccess: s.KeepSuccess, FeedAhead: s.FeedAhead, FeedEvery: s.FeedEvery,
			RescheduleGrace: s.RescheduleGrace,
			Metrics:         populate.NewMetrics(deps.Server.Metrics, deps.Logger, tables),
		})
		if err := e.StartTables(ctx); err != nil {
			return err
		}
		if err := e.InstallTriggers(ctx); err != nil {
			return err
		}
		_ = work.Register(deps.Workers, e, work.Config{
			Log: &work.ActionLog{Logger: deps.Logger}, MakeTimeout: s.MakeTimeout, MaintenanceTimeout: s.MaintenanceTimeout,
			FeedTimeout: s.FeedTimeout, ScheduleEvery: s.ScheduleEvery, CleanupEvery: s.CleanupEvery,
		})
		if _, err := deps.NewClient(); err != nil {
			return err
		}
		deps.Go(func(ctx context.Context) error {
			<-ctx.Done()
			e.SetStopping()
			return nil
		})
		deps.Go(func(ctx context.Context) error { return e.WatchRuns(ctx, s.RunWatchEvery) })
		warn := func(ctx context.Context, msg string, err error) {
			if err != nil && ctx.Err() == nil {
				deps.Logger.WarnContext(ctx, msg, "error", err)
			}
		}
		deps.Go(func(ctx context.Context) error {
			return every(ctx, time.Second, func() {
				warn(ctx, "change listener stopped; restarting", e.Listen(ctx, deps.Inserters[queue.PopulateWorker], s.ListenFlushEvery))
			})
		})
		deps.Go(func(ctx context.Context) error {
			return every(ctx, s.ReclaimEvery, func() {
				_, err := e.Reclaim(ctx)
				warn(ctx, "reclaim orphaned reservations", err)
			})
		})
		*engine = e
		return nil
	}
}

// every runs f, then again every period, until ctx ends: wire.go's reclaim loop, and its change
// listener's restarts.
func every(ctx context.Context, period time.Duration, f func()) error {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// floorArgs is a job of River's bare floor: on the make workers' queue, doing nothing.
type floorArgs struct{}

func (floorArgs) Kind() string { return "bench_floor" }

func (floorArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue.QueuePopulate} }

type floorWorker struct {
	river.WorkerDefaults[floorArgs]
}

func (floorWorker) Work(context.Context, *river.Job[floorArgs]) error { return nil }

// wireFloor wires River's bare floor into the service in place of its workers: the same spec
// (queues, pool, timeouts, fetch settings) and client (Deps.NewClient), one no-op worker.
func wireFloor(deps *service.Deps) error {
	river.AddWorker(deps.Workers, &floorWorker{})
	_, err := deps.NewClient()
	return err
}
