package service

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/shared/web"
)

// Deps is what a service's wiring function receives: the shared pieces to build on, and the
// places to register its own workers, periodic jobs, routes and background loops.
type Deps struct {
	Service   queue.Service
	Pool      *pgxpool.Pool
	Logger    *slog.Logger
	Inserters queue.Inserters // insert-only clients for every service's queue, this one's too
	Workers   *river.Workers
	Server    *web.Server

	// PeriodicJobs are enqueued by the service's River leader.
	PeriodicJobs []*river.PeriodicJob

	background []func(context.Context) error
	client     *queue.Client
}

// Go runs loop alongside the server for the life of the service. Its context ends at shutdown;
// an error it returns stops the service.
func (d *Deps) Go(loop func(context.Context) error) { d.background = append(d.background, loop) }

// Client returns the service's River client; it exists once wiring is over (use it from workers
// and handlers, not during wiring).
func (d *Deps) Client() *queue.Client { return d.client }

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
