// Package postgres opens the pgx pool a service works with: bound to the service's schema through
// search_path, and patient at start, because in a deployment the database may come up after the
// service does.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/shared/tracing"
)

// DBTX is what store functions take, so that the caller decides the transaction: a pool, a
// connection or a pgx.Tx.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Options tune Open.
type Options struct {
	// Schema becomes the first entry of search_path, so a service's queries name its own tables
	// without a schema. Empty leaves search_path alone.
	Schema string

	// AppName is the application_name every connection of the pool reports (pg_stat_activity
	// tells each process's connections apart by it), unless databaseURL sets one.
	AppName string

	// MaxConns caps the pool; pgx's default applies when zero.
	MaxConns int32

	// Params are run-time parameters every connection of the pool is opened with (for example
	// synchronous_commit), on top of those of databaseURL.
	Params map[string]string

	// ConnectTimeout bounds how long Open keeps retrying a database that does not answer yet.
	// Zero retries until ctx ends.
	ConnectTimeout time.Duration

	// OnFailure, when set, hears of every failed attempt (the first is 1) while Open retries.
	OnFailure func(attempt int, err error)
}

// Open returns a pool on databaseURL that has answered a ping. When the process traces
// (shared/tracing), each query of a traced piece of work is a span of it.
func Open(ctx context.Context, databaseURL string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema + ",public"
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set && opts.AppName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.AppName
	}
	maps.Copy(cfg.ConnConfig.RuntimeParams, opts.Params)
	if tracer := tracing.QueryTracer(); tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	if err := ping(ctx, pool, opts); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// ping retries until the database answers, waiting 0.5 s after the first failure and twice as
// long after each next one, up to 5 s.
func ping(ctx context.Context, pool *pgxpool.Pool, opts Options) error {
	deadline := time.Now().Add(opts.ConnectTimeout)
	wait := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := pool.Ping(pingCtx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || opts.ConnectTimeout > 0 && time.Now().After(deadline) {
			return fmt.Errorf("database does not answer: %w", errors.Join(ctx.Err(), err))
		}
		if opts.OnFailure != nil {
			opts.OnFailure(attempt, err)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
