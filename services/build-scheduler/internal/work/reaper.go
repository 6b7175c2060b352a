package work

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// Reaper settles, every Interval, the builds that wait on a River job no longer there to run them
// (jobgraph.Orphans): one whose River job ended without a report gets a new attempt, one whose
// River job was cancelled or deleted in River UI before it ran is cancelled with its unstarted
// dependents, and a job left pending by the upgrade gets its River job. A dead worker's builds
// do not wait for it: the liveness sweep replaces them in its own transaction.
type Reaper struct {
	Pool     *pgxpool.Pool
	Graph    *jobgraph.Graph
	Interval time.Duration
	Logger   *slog.Logger
	Metrics  *Metrics // nil counts nothing
}

// Run reaps every Interval until ctx ends.
func (r *Reaper) Run(ctx context.Context) error {
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := r.Reap(ctx); err != nil && ctx.Err() == nil {
			r.Logger.ErrorContext(ctx, "reap orphaned builds", "error", err)
		}
	}
}

// reapBatch is how many orphans a pass lists at a time.
const reapBatch = 100

// Reap settles the orphans, each in a transaction of its own, guarded by the state and attempt it
// was found in, listing them a batch at a time until a batch comes back short (after an upgrade,
// thousands of pending jobs are dispatched in one pass).
func (r *Reaper) Reap(ctx context.Context) error {
	for {
		n, err := r.reapBatch(ctx)
		if err != nil || n < reapBatch {
			return err
		}
	}
}

// reapBatch settles one batch of orphans and returns how many it listed.
func (r *Reaper) reapBatch(ctx context.Context) (int, error) {
	orphans, err := jobgraph.Orphans(ctx, r.Pool, reapBatch)
	if err != nil {
		return 0, err
	}
	for _, o := range orphans {
		var (
			res jobgraph.Result
			did string
		)
		err := pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) (err error) {
			res, did, err = r.Graph.AdoptTx(ctx, tx, o)
			return err
		})
		if err != nil {
			return 0, err
		}
		r.Metrics.adoptedOrphan(o, res, did)
	}
	return len(orphans), nil
}
