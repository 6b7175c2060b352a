package work

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// Reaper takes jobs back from workers that stopped heartbeating, and replaces dispatch tokens
// lost with a worker that died before claiming (see jobgraph.Graph.RedispatchTx). It runs as a loop in every
// scheduler replica rather than as a River periodic job, so a lost worker is noticed within the
// lease plus Interval instead of waiting for River's leader to rescue the token, which it does
// only after the longest build's timeout (buildworker.Worker.Timeout); the guarded
// transitions make replicas reaping at once harmless.
type Reaper struct {
	Pool     *pgxpool.Pool
	Graph    *jobgraph.Graph
	Interval time.Duration
	// TokenGrace is how long a ready job may wait, while its target has fewer queued tokens
	// than ready jobs, before the reaper issues another token.
	TokenGrace time.Duration
	Logger     *slog.Logger
	Metrics    *Metrics // nil counts nothing
}

// Run reaps until ctx ends. Database errors are logged and retried on the next tick.
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
			r.Logger.Error("reap expired leases", "error", err)
		}
	}
}

// Reap expires every lease that has run out, each in its own transaction, then replaces lost
// dispatch tokens in one more.
func (r *Reaper) Reap(ctx context.Context) error {
	leases, err := jobgraph.ExpiredLeases(ctx, r.Pool, 100)
	if err != nil {
		return err
	}
	for _, l := range leases {
		var res jobgraph.Result
		err := pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
			var err error
			res, err = r.Graph.ExpireTx(ctx, tx, l)
			return err
		})
		if err != nil {
			return err
		}
		r.Metrics.expired(l, res)
	}
	return pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		n, err := r.Graph.RedispatchTx(ctx, tx, r.TokenGrace)
		if n > 0 {
			r.Logger.Warn("reissued lost dispatch tokens", "tokens", n)
		}
		return err
	})
}
