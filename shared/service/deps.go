package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/shared/backlog"
	"drover.dev/shared/metrics"
	"drover.dev/shared/web"
)

// Deps is what a service's wiring function receives: the shared pieces to build on, and the
// places to register its own workers, periodic jobs, routes and background loops. Wiring goes in
// the order of what needs what: workers and periodic jobs, then the River client (NewClient),
// then the handlers, which get the client itself.
type Deps struct {
	Service   queue.Service
	Pool      *pgxpool.Pool
	Logger    *slog.Logger
	Inserters queue.Inserters // insert-only clients for every service's queue, this one's too
	Workers   *river.Workers
	Server    *web.Server
	// Backlog refuses enqueue requests for a queue holding MAX_QUEUED waiting jobs.
	Backlog *backlog.Gauge

	// PeriodicJobs are enqueued by the service's River leader.
	PeriodicJobs []*river.PeriodicJob

	// Takeovers are what this process's liveness sweeps do, beyond River's rescue, for the jobs of
	// a kind whose process died (queue.Takeover); set before NewClient.
	Takeovers map[string]queue.Takeover

	spec       Spec
	background []func(context.Context) error
	client     *queue.Client
	process    *queue.Process
	rescued    *prometheus.CounterVec // drover_queue_jobs_rescued_total, started at zero by observeRiver
	riverUI    *lazyRiverUI
	failures   *prometheus.CounterVec // failed gauge statements, for Gauge
}

// Gauges registers gauge families on the service's /metrics, each computed at scrape time by one
// bounded SQL statement on the service's pool (see metrics.QueryGauge).
func (d *Deps) Gauges(gauges ...metrics.Gauge) {
	for _, g := range gauges {
		d.Server.Metrics.MustRegister(metrics.NewQueryGauge(d.Pool, d.failures, g))
	}
}

// Go runs loop alongside the server for the life of the service. Its context ends at shutdown;
// an error it returns stops the service.
func (d *Deps) Go(loop func(context.Context) error) { d.background = append(d.background, loop) }

// NewClient builds the service's River client on its own schema from the workers and periodic
// jobs registered so far. River fixes both when the client is built, so a wiring function calls it
// once, after registering them and before the handlers that use the client. The client starts
// when the service runs.
func (d *Deps) NewClient() (*queue.Client, error) {
	if d.client != nil {
		return nil, errors.New("river client already built")
	}
	d.process = d.newProcess(clientID(d.spec))
	client, err := queue.NewClient(d.Pool, d.Service, queue.ClientConfig{
		Process:              d.process,
		Queues:               withProbeQueue(d.spec.Queues),
		Workers:              d.Workers,
		PeriodicJobs:         d.PeriodicJobs,
		JobTimeout:           d.spec.JobTimeout,
		RescueStuckJobsAfter: d.spec.RescueStuckJobsAfter,
		Logger:               d.Logger,
		Fetch:                d.spec.Fetch,
	})
	if err != nil {
		return nil, fmt.Errorf("build river client: %w", err)
	}
	d.client = client
	return client, nil
}

func (d *Deps) checks() []web.Check {
	return []web.Check{
		{Name: "database", Func: func(ctx context.Context) error { return d.Pool.Ping(ctx) }},
		{Name: "river", Func: func(context.Context) error {
			if d.client == nil {
				return errors.New("not started")
			}
			select {
			case <-d.client.Stopped():
				return errors.New("stopped")
			default:
				return nil
			}
		}},
	}
}
