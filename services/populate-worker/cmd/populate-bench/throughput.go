package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"drover.dev/services/populate-worker/internal/populate"
)

// reset leaves exactly o.jobs scheduled jobs of the bench table and nothing else of the bench's
// own tables. River's jobs stay: the makes here run without River, and no River job is touched.
func (b *bench) reset(ctx context.Context) error {
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`TRUNCATE jobs, bench_dst`, nil},
		{`INSERT INTO jobs (table_name, key_hash, status, key)
			SELECT 'bench', md5(jsonb_build_object('k', k)::text), 'scheduled', jsonb_build_object('k', k)
			FROM generate_series(1, $1::int) k`, []any{b.o.jobs}},
		{`ANALYZE jobs`, nil},
	} {
		if _, err := b.pool.Exec(ctx, st.sql, st.args...); err != nil {
			return fmt.Errorf("reset jobs: %w", err)
		}
	}
	b.made.Clear()
	return nil
}

// throughputTarget is the share of the floor's rate that reserve + make + complete should reach,
// in percent, at every number of workers.
const throughputTarget = 80.0

// throughput measures ours and the floor with w workers, prints both and their ratio, and
// returns the number of double reservations seen.
func (b *bench) throughput(ctx context.Context, w int) (int, error) {
	if err := b.reset(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	made, err := b.makeAll(ctx, w)
	if err != nil {
		return 0, err
	}
	ours := float64(made) / time.Since(start).Seconds()
	doubles := b.doubles()
	if err := b.reset(ctx); err != nil {
		return 0, err
	}
	floor, floorDoubles, err := b.floor(ctx, w)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(b.out, "engine make loop (no River fetch), workers %2d: ours %7.0f keys/s  SKIP LOCKED floor %7.0f claims/s  ratio %5.1f %% (target >= %.0f %%)  (made %d of %d)\n",
		w, ours, floor, 100*ours/floor, throughputTarget, made, b.o.jobs)
	if made != b.o.jobs {
		return doubles, fmt.Errorf("populate made %d of %d jobs", made, b.o.jobs)
	}
	return doubles + floorDoubles, nil
}

// makeAll makes every scheduled key through the River make worker's entry point (MakeKey: reserve,
// make, finish), w at a time, without River's fetch, and returns how many it made.
func (b *bench) makeAll(ctx context.Context, w int) (int, error) {
	rows, err := b.pool.Query(ctx, `SELECT key_hash FROM jobs WHERE table_name = 'bench' AND status = 'scheduled' ORDER BY key`)
	if err != nil {
		return 0, fmt.Errorf("list scheduled jobs: %w", err)
	}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("list scheduled jobs: %w", err)
	}
	next := make(chan string, len(hashes))
	for _, h := range hashes {
		next <- h
	}
	close(next)
	var made atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range w {
		g.Go(func() error {
			for h := range next {
				end, err := b.engine.MakeKey(gctx, populate.Background, "bench", h, populate.MakeOpts{}, nil)
				if err != nil {
					return err
				}
				if end.Outcome == populate.OutcomeMade {
					made.Add(1)
				}
			}
			return nil
		})
	}
	err = g.Wait()
	return int(made.Load()), err
}

func (b *bench) doubles() int {
	n := 0
	b.made.Range(func(_, v any) bool {
		if atomic.LoadInt64(v.(*int64)) > 1 {
			n++
		}
		return true
	})
	return n
}

// floor is the bare claim-and-complete loop: claim one scheduled row with SKIP LOCKED, complete
// it by deleting it, in two statements as a worker must (the make runs between them).
func (b *bench) floor(ctx context.Context, w int) (float64, int, error) {
	var claimed sync.Map
	var total, doubles atomic.Int64
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range w {
		g.Go(func() error {
			for {
				var hash string
				err := b.pool.QueryRow(gctx, `UPDATE jobs SET status = 'reserved', connection_id = pg_backend_pid(), "timestamp" = now()
					WHERE table_name = 'bench' AND key_hash = (SELECT key_hash FROM jobs
						WHERE table_name = 'bench' AND status = 'scheduled' LIMIT 1 FOR UPDATE SKIP LOCKED)
					RETURNING key_hash`).Scan(&hash)
				if err != nil {
					return ignoreNoRows(err)
				}
				if _, dup := claimed.LoadOrStore(hash, true); dup {
					doubles.Add(1)
				}
				if _, err := b.pool.Exec(gctx, `DELETE FROM jobs WHERE table_name = 'bench' AND key_hash = $1`, hash); err != nil {
					return err
				}
				total.Add(1)
			}
		})
	}
	if err := g.Wait(); err != nil {
		return 0, 0, fmt.Errorf("floor with %d workers: %w", w, err)
	}
	return float64(total.Load()) / time.Since(start).Seconds(), int(doubles.Load()), nil
}
