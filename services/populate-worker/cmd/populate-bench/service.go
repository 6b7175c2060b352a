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
	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/config"
	"drover.dev/shared/service"
)

// The end-to-end figures run the populate-worker in this process as its main.go and wire.go run
// it: service.Run (its pool, inserters, liveness and River client) with the settings' queues and
// timeouts, and wiring.Start (the engine, its workers, the River client and the loops beside it).

// poolSize is the pool a deployment with s's MAKE_WORKERS has: the service's share of the
// connection budget (DB_MAX_CONNS unset), or the least check-config accepts when that is too
// small.
func poolSize(s wiring.Settings) int32 {
	return max(config.DBBudget["POPULATE_WORKER"], int32(s.PoolNeeded()))
}

// runningWorker is a populate-worker, or River's floor on the same wiring, running in this
// process.
type runningWorker struct {
	ins  *queue.Client // the service's inserter for its own queues
	stop func() error
}

// startWorker runs the service on dbURL with s, with wire registering its workers and building
// its River client (Deps.NewClient), and returns once River has started.
func startWorker(ctx context.Context, dbURL string, s wiring.Settings, wire func(*service.Deps) error) (*runningWorker, error) {
	var common config.Common
	if err := config.Defaults(&common); err != nil {
		return nil, err
	}
	common.DatabaseURL, common.DBMaxConns = dbURL, poolSize(s)
	common.LogLevel, common.LogFormat = "warn", "text" // the bench's output is its figures
	common.APITokens = []string{"populate-bench"}      // the service refuses to start without one; nothing calls it
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	spec := service.Spec{
		Service: queue.PopulateWorker, Config: common, Settings: &common, Listener: ln, Queues: s.Queues(),
		JobTimeout: s.RescueAfter(), RescueStuckJobsAfter: s.RescueAfter(),
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

// wireMakes starts what makes keys of reg's tables as wire.go starts it (wiring.Start), and
// stores the engine in *engine. Left out: the routes and gauges (nothing calls them here),
// function signing (no HTTP makes), and the periodic schedule and cleanup.
func wireMakes(ctx context.Context, reg *populate.Registry, s wiring.Settings, engine **populate.Engine) func(*service.Deps) error {
	return func(deps *service.Deps) error {
		e, err := wiring.Start(ctx, deps, reg, s, wiring.Options{})
		*engine = e
		return err
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
