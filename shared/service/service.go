// Package service is the lifecycle every Drover service shares: it builds the logger, the pool on
// the service's schema, the insert-only clients for every service's queue and the HTTP server, lets
// the service wire its own workers, River client and routes in that order, runs everything, and on
// cancellation drains HTTP, soft-stops River, then hard-stops it within the shutdown budget.
package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"golang.org/x/sync/errgroup"

	"drover.dev/queue"
	"drover.dev/shared/backlog"
	"drover.dev/shared/config"
	"drover.dev/shared/logging"
	"drover.dev/shared/metrics"
	"drover.dev/shared/postgres"
	"drover.dev/shared/probe"
	"drover.dev/shared/tracing"
	"drover.dev/shared/web"
)

// Spec describes one service process.
type Spec struct {
	Service queue.Service
	// Name is what the process logs as ("service" on every line); Service's name when empty. A
	// process that works a service's schema without being the service (build-worker) sets it.
	Name     string
	Config   config.Common
	Settings any // the service's whole config, logged masked at start

	// HTTPAddr is where the server listens, unless Listener is set (tests pass one on port 0).
	HTTPAddr string
	Listener net.Listener

	// Queues maps the service's own queues to worker counts. The probe queue is added.
	Queues map[string]int

	JobTimeout           time.Duration
	RescueStuckJobsAfter time.Duration

	// Fetch is how eagerly the River client fetches jobs; River's defaults when zero.
	Fetch queue.Fetch

	// DBParams are Postgres run-time parameters of every connection of the service's pool, its
	// River client's included (postgres.Options.Params); the server's settings when empty.
	DBParams map[string]string

	// OpenAPI is the service's own OpenAPI 3.1 document (its /v1 paths and schemas), merged with
	// what every service serves and checked against the routes at start: a service whose
	// document and routes disagree refuses to start.
	OpenAPI []byte
}

// Run runs the service until ctx is cancelled, then shuts it down within the configured budget.
// It builds the logger and the HTTP server and starts serving /healthz and /readyz at once; it
// opens the pool, waiting for the database as long as it takes (/readyz answers 503 with the
// reason meanwhile, so an orchestrator sees a live process that is not ready, not a crash loop);
// then wire registers the service's own workers and periodic jobs, builds the River client
// (Deps.NewClient), and registers the routes and background loops that use it, and the routes
// open.
func Run(ctx context.Context, spec Spec, stdout io.Writer, wire func(*Deps) error) (err error) {
	cfg := spec.Config
	logger, err := logging.New(stdout, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	name := spec.Name
	if name == "" {
		name = string(spec.Service)
	}
	logger = logger.With("service", name)
	logger.LogAttrs(ctx, slog.LevelInfo, "starting", slog.GroupValue(config.Masked(spec.Settings)...).Group()...)
	stopTracing, err := tracing.Start(ctx, name, logger)
	if err != nil {
		return err
	}
	defer flushTraces(stopTracing, logger)
	if tracing.Enabled() {
		logger.InfoContext(ctx, "tracing on", "otel_exporter_otlp_endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}

	deps := &Deps{spec: spec, Service: spec.Service, Logger: logger, Workers: river.NewWorkers()}
	deps.Server, err = web.New(web.Config{
		Tokens: cfg.APITokens, AuthDisabled: cfg.AuthDisabled, BodyLimit: cfg.BodyLimit,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout, ReadTimeout: cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout,
	}, logger, deps.checks()...)
	if err != nil {
		return err
	}
	ln := spec.Listener
	if ln == nil {
		if ln, err = new(net.ListenConfig).Listen(ctx, "tcp", spec.HTTPAddr); err != nil {
			return fmt.Errorf("listen on %s: %w", spec.HTTPAddr, err)
		}
	}
	var waiting startState
	waiting.set("database", "connecting")
	waiting.set("river", "not started")
	deps.Server.Hold(waiting.report)
	httpDone := make(chan error, 1)
	go func() { httpDone <- deps.Server.Serve(ln) }()
	serving := false
	defer func() {
		if serving {
			return
		}
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = errors.Join(err, deps.Server.Shutdown(stop), <-httpDone)
	}()

	if err := deps.connect(ctx, &waiting); err != nil {
		if ctx.Err() != nil {
			logger.InfoContext(ctx, "stopped while waiting for the database", "error", err)
			return nil
		}
		return err
	}
	defer deps.Pool.Close()
	waiting.set("database", "ok")
	if err := wire(deps); err != nil {
		return fmt.Errorf("wire %s: %w", spec.Service, err)
	}
	if deps.client == nil {
		return fmt.Errorf("wire %s: the River client was never built (Deps.NewClient)", spec.Service)
	}
	deps.Server.API.GET("/processes", deps.handleProcesses)
	if err := deps.Server.ServeOpenAPI("Drover "+string(spec.Service), probe.OpenAPI, ProcessesOpenAPI, spec.OpenAPI); err != nil {
		return fmt.Errorf("%s: %w", spec.Service, err)
	}
	if deps.riverUI, err = mountRiverUI(deps); err != nil {
		return err
	}
	serving = true
	return serve(ctx, spec, deps, httpDone)
}

// flushTraces sends the spans still buffered at shutdown, waiting at most 5 s for the collector.
func flushTraces(stop func(context.Context) error, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		logger.Warn("traces not flushed at shutdown", "error", err)
	}
}

// startState is what /readyz reports while the service starts: each dependency's state.
type startState struct {
	mu    sync.Mutex
	state map[string]string
}

func (s *startState) set(name, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = map[string]string{}
	}
	s.state[name] = state
}

func (s *startState) report() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.state)
}

// connect opens the service's pool, retrying until the database answers or ctx ends, then builds
// what needs the pool: the insert-only clients, the gauge failure counter and the probe routes.
func (d *Deps) connect(ctx context.Context, waiting *startState) error {
	cfg, spec := d.spec.Config, d.spec
	name := cmp.Or(spec.Name, string(spec.Service))
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{
		Schema: spec.Service.Schema(), MaxConns: cfg.PoolSize(strings.ToUpper(strings.ReplaceAll(name, "-", "_"))),
		AppName: "drover-" + name, Params: spec.DBParams,
		OnFailure: func(attempt int, err error) {
			waiting.set("database", err.Error())
			if attempt == 1 || attempt%12 == 0 {
				d.Logger.WarnContext(ctx, "database does not answer; retrying, /readyz answers 503 meanwhile", "attempt", attempt, "error", err)
			}
		},
	})
	if err != nil {
		return err
	}
	d.Logger.InfoContext(ctx, "database connected", "db_max_conns", pool.Config().MaxConns)
	inserters, err := queue.NewInserters(pool)
	if err != nil {
		pool.Close()
		return err
	}
	d.Pool, d.Inserters = pool, inserters
	d.failures = metrics.NewQueryFailures()
	d.Server.Metrics.MustRegister(d.failures, metrics.NewPool(pool))
	d.Backlog = backlog.New(pool, spec.Config.MaxQueued, backlog.DefaultInterval, d.Server.Metrics, d.Logger)
	d.Go(d.Backlog.Run)
	probe.Register(d.Workers, d.Server.API, pool, inserters, spec.Service, d.Backlog, d.Logger)
	return nil
}

// serve runs HTTP (already serving on httpDone's behalf), River and the service's background
// loops, opens the routes, and shuts them down in order.
func serve(ctx context.Context, spec Spec, deps *Deps, httpDone <-chan error) error {
	// River UI's caches, once its first request starts them, run until the service has stopped
	// serving it.
	uiCtx, stopUI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopUI()
	deps.riverUI.serveUntil(uiCtx)
	// The liveness record comes first: a job River fetches is always under a record a sweep
	// can find once the process is gone.
	if err := deps.process.Register(ctx); err != nil {
		return errors.Join(err, stopHTTP(ctx, deps, httpDone))
	}
	// River's own context outlives ctx: stopping is ours to sequence below.
	if err := deps.client.Start(context.WithoutCancel(ctx)); err != nil {
		return errors.Join(fmt.Errorf("start river: %w", err), stopHTTP(ctx, deps, httpDone))
	}
	// Renewal goes on until River has stopped: a long soft stop is no reason to be declared dead.
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() { defer close(liveDone); _ = deps.process.Run(liveCtx) }()
	stopLiveness := func() { stopLive(); <-liveDone }
	defer stopLiveness()
	deps.Server.Open()
	deps.Logger.InfoContext(ctx, "ready")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return <-httpDone })
	g.Go(func() error { observeRiver(gctx, deps); return nil })
	for _, loop := range deps.background {
		g.Go(func() error { return loop(gctx) })
	}
	g.Go(func() error {
		select {
		case <-gctx.Done():
		case <-deps.client.Stopped():
			return fmt.Errorf("river client stopped unexpectedly")
		}
		return shutdown(spec.Config, deps, stopLiveness)
	})
	err := g.Wait()
	deps.Logger.InfoContext(ctx, "stopped", "error", err)
	return err
}

// stopHTTP stops the server a failed start left serving.
func stopHTTP(ctx context.Context, deps *Deps, httpDone <-chan error) error {
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return errors.Join(deps.Server.Shutdown(stop), <-httpDone)
}

// shutdown drains HTTP, gives running jobs SoftStopTimeout to finish, then cancels them and waits
// for the rest of the budget. Last, the process leaves: its liveness record goes, and a job River
// could not stop comes back at once instead of after LIVENESS_TIMEOUT.
func shutdown(cfg config.Common, deps *Deps, stopLiveness func()) error {
	deps.Logger.Info("shutting down", "budget", cfg.ShutdownTimeout)
	budget, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err := stopRiver(budget, cfg, deps)
	stopLiveness()
	leave, cancelLeave := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLeave()
	return errors.Join(err, deps.process.Leave(leave))
}

// stopRiver drains HTTP and stops River within budget, softly first.
func stopRiver(budget context.Context, cfg config.Common, deps *Deps) error {
	httpErr := deps.Server.Shutdown(budget)
	soft, cancelSoft := context.WithTimeout(budget, cfg.SoftStopTimeout)
	defer cancelSoft()
	if err := deps.client.Stop(soft); err == nil {
		return httpErr
	}
	deps.Logger.WarnContext(budget, "jobs still running after the soft stop timeout; cancelling them")
	if err := deps.client.StopAndCancel(budget); err != nil {
		return fmt.Errorf("stop river within %s: %w", cfg.ShutdownTimeout, err)
	}
	return httpErr
}

// observeRiver feeds the service's River metrics from its client's events until ctx ends.
func observeRiver(ctx context.Context, deps *Deps) {
	r := metrics.NewRiver(deps.Server.Metrics, deps.Pool, deps.failures)
	r.ZeroPerKind(deps.rescued)
	events, cancel := deps.client.Subscribe(metrics.RiverEvents...)
	defer cancel()
	r.Consume(ctx, events)
}

func withProbeQueue(queues map[string]int) map[string]int {
	out := map[string]int{queue.QueueProbe: 2}
	for name, n := range queues {
		out[name] = n
	}
	return out
}

// clientID is unique per process and service, so that five services in one process (tests, the
// development runner) or many replicas never share a River client id. It starts with the
// process's name (build-worker, or the service), which River UI shows in a job's attempted_by.
func clientID(spec Spec) string {
	if spec.Config.WorkerID != "" {
		return spec.Config.WorkerID
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%s-%d-%s", cmp.Or(spec.Name, string(spec.Service)), host, os.Getpid(), hex.EncodeToString(b))
}
