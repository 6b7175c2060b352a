package populate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// source hands populate's processes their next key; nil when there is none left.
type source interface {
	next(ctx context.Context, conn *pgxpool.Conn) (*reservation, error)
}

// keySource picks how populate finds keys: claiming in key order, reserving a shuffled list, or
// (without reserve_jobs) straight from key_source.
func (e *Engine) keySource(ctx context.Context, t *Table, f filter, opts Opts) (source, error) {
	meta := e.runMetadata("populate")
	switch {
	case !opts.ReserveJobs:
		keys, err := e.directKeys(ctx, t, f, opts.Order)
		return &directSource{table: t, keys: keys, meta: meta}, err
	case opts.Order == OrderRandom:
		hashes, err := e.scheduledHashes(ctx, t, f)
		rand.Shuffle(len(hashes), func(i, j int) { hashes[i], hashes[j] = hashes[j], hashes[i] })
		return &listSource{engine: e, table: t, hashes: hashes, meta: meta}, err
	}
	return &claimSource{engine: e, table: t, filter: f, order: opts.Order, meta: meta}, nil
}

// claimSource reserves the next scheduled key in key order with SKIP LOCKED.
type claimSource struct {
	engine *Engine
	table  *Table
	filter filter
	order  Order
	meta   map[string]any
}

// claimRetry is how long claimSource waits before claiming again when every scheduled key is
// locked by someone else.
const claimRetry = 10 * time.Millisecond

// next claims the next key. SKIP LOCKED also skips rows locked by a concurrent schedule_jobs (its
// ON CONFLICT DO UPDATE locks every conflicting row, even those it leaves alone) or cleanup, so
// finding nothing to claim ends the call only when no matching key is scheduled at all; otherwise
// the locks are transient and it claims again.
func (s *claimSource) next(ctx context.Context, conn *pgxpool.Conn) (*reservation, error) {
	for {
		r, err := s.engine.claimNext(ctx, conn, s.table, s.filter, s.order, s.meta)
		if err != nil || r != nil {
			return r, err
		}
		left, err := s.engine.anyScheduled(ctx, conn, s.table, s.filter)
		if err != nil || !left {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(claimRetry):
		}
	}
}

// anyScheduled reports whether t has a scheduled job matching f, locked or not.
func (e *Engine) anyScheduled(ctx context.Context, conn *pgxpool.Conn, t *Table, f filter) (bool, error) {
	cond, args := f.where("key", []any{t.Name})
	var ok bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE table_name = $1 AND status = 'scheduled' AND `+cond+`)`, args...).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look for scheduled jobs of %s: %w", t.Name, err)
	}
	return ok, nil
}

// listSource reserves keys from a list, skipping those another worker reserved first.
type listSource struct {
	engine *Engine
	table  *Table
	meta   map[string]any
	mu     sync.Mutex
	hashes []string
}

func (s *listSource) next(ctx context.Context, conn *pgxpool.Conn) (*reservation, error) {
	for {
		s.mu.Lock()
		if len(s.hashes) == 0 {
			s.mu.Unlock()
			return nil, nil
		}
		h := s.hashes[0]
		s.hashes = s.hashes[1:]
		s.mu.Unlock()
		r, err := s.engine.reserveKey(ctx, conn, s.table, h, s.meta)
		if err != nil || r != nil {
			return r, err
		}
	}
}

// directSource hands out keys computed up front, with nothing reserved.
type directSource struct {
	table *Table
	meta  map[string]any
	mu    sync.Mutex
	keys  []Key
}

func (s *directSource) next(_ context.Context, conn *pgxpool.Conn) (*reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) == 0 {
		return nil, nil
	}
	k := s.keys[0]
	s.keys = s.keys[1:]
	return &reservation{table: s.table, key: k, conn: conn, started: time.Now(), meta: s.meta, direct: true}, nil
}

// scheduledHashes lists the scheduled jobs of t matching f.
func (e *Engine) scheduledHashes(ctx context.Context, t *Table, f filter) ([]string, error) {
	cond, args := f.where("key", []any{t.Name})
	rows, err := e.pool.Query(ctx, `SELECT key_hash FROM jobs WHERE table_name = $1 AND status = 'scheduled' AND `+cond, args...)
	if err != nil {
		return nil, fmt.Errorf("list scheduled jobs of %s: %w", t.Name, err)
	}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list scheduled jobs of %s: %w", t.Name, err)
	}
	return hashes, nil
}

// directKeys lists key_source minus target, restricted, without the keys whose job is in error
// or ignore, in order.
func (e *Engine) directKeys(ctx context.Context, t *Table, f filter, order Order) ([]Key, error) {
	cond, args := f.where("x.key", []any{t.Name})
	orderBy := map[Order]string{OrderOriginal: "x.key", OrderReverse: "x.key DESC", OrderRandom: "random()"}[order]
	rows, err := e.pool.Query(ctx, `SELECT x.key FROM (`+todoSQL(t)+`) x
		WHERE `+cond+` AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.table_name = $1
			AND j.key_hash = md5(x.key::text) AND j.status IN ('error', 'ignore'))
		ORDER BY `+orderBy, args...)
	if err != nil {
		return nil, fmt.Errorf("list keys to make of %s: %w", t.Name, err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("list keys to make of %s: %w", t.Name, err)
	}
	keys := make([]Key, len(raw))
	for i, b := range raw {
		if keys[i], err = scanKey(b); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// todoSQL is key_source minus the target, matched on the primary key only, as column key.
func todoSQL(t *Table) string {
	return `SELECT ` + t.keyObject("s") + ` AS key FROM (` + t.KeySource + `) s
		WHERE NOT EXISTS (SELECT 1 FROM ` + t.target() + ` t WHERE ` + t.pkMatch("t", "s") + `)`
}
