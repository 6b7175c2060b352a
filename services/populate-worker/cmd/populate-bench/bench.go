package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/migrations"
	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/postgres"
)

// bench is the benchmark's database, pool and engine.
type bench struct {
	o      options
	out    io.Writer
	admin  *pgx.Conn
	dbName string
	pool   *pgxpool.Pool
	engine *populate.Engine
	made   sync.Map // key text → *int: make calls per key
}

// newBench creates and migrates a database of its own, with the bench pipeline: manual table
// bench_src (k) and computed table bench_dst (k) with a no-op make that counts its calls.
func newBench(ctx context.Context, o options, out io.Writer) (*bench, error) {
	admin, err := pgx.Connect(ctx, o.serverURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redact(o.serverURL), err)
	}
	b := &bench{o: o, out: out, admin: admin, dbName: fmt.Sprintf("populate_bench_%x", rand.Uint32())}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+b.dbName); err != nil {
		return nil, fmt.Errorf("create database %s: %w", b.dbName, err)
	}
	u, _ := url.Parse(o.serverURL)
	u.Path = "/" + b.dbName
	if err := migrations.Up(ctx, u.String(), slog.New(slog.DiscardHandler)); err != nil {
		return b, fmt.Errorf("migrate %s: %w", b.dbName, err)
	}
	b.pool, err = postgres.Open(ctx, u.String(), postgres.Options{Schema: "populate_worker", MaxConns: 40, ConnectTimeout: 10 * time.Second})
	if err != nil {
		return b, err
	}
	_, err = b.pool.Exec(ctx, `CREATE TABLE bench_src (k bigint PRIMARY KEY); CREATE TABLE bench_dst (k bigint PRIMARY KEY)`)
	if err != nil {
		return b, fmt.Errorf("create bench tables: %w", err)
	}
	return b, b.newEngine()
}

func (b *bench) newEngine() error {
	reg := populate.NewRegistry()
	err := reg.Register(populate.Table{
		Name: "bench", Target: "bench_dst", PrimaryKey: []string{"k"}, KeySource: "SELECT k FROM bench_src",
		Make: func(_ context.Context, _ pgx.Tx, key populate.Key) ([]populate.Row, error) {
			n, _ := b.made.LoadOrStore(key.String("k"), new(int64))
			atomicAdd(n.(*int64))
			return nil, nil
		},
	})
	if err != nil {
		return err
	}
	ins, err := queue.NewInserter(b.pool, queue.PopulateWorker)
	if err != nil {
		return err
	}
	b.engine = populate.NewEngine(b.pool, ins, reg, populate.Config{
		WorkerID: "bench", OrphanTimeout: 2 * time.Minute, FeedAhead: b.o.jobs, FeedEvery: 500 * time.Millisecond,
	})
	return nil
}

func (b *bench) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // dropped on Ctrl-C too
	if b.pool != nil {
		b.pool.Close()
	}
	if !b.o.keep {
		_, _ = b.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+b.dbName+" WITH (FORCE)")
	}
	_ = b.admin.Close(ctx)
}

// scheduleTarget is the time schedule_jobs should take over a million keys, in seconds.
const scheduleTarget = 10.0

// schedule measures schedule_jobs over o.keys keys.
func (b *bench) schedule(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, `INSERT INTO bench_src SELECT generate_series(1, $1::bigint)`, b.o.keys); err != nil {
		return fmt.Errorf("fill bench_src: %w", err)
	}
	if _, err := b.pool.Exec(ctx, `ANALYZE bench_src`); err != nil {
		return err
	}
	floor, err := b.scheduleFloor(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := b.engine.ScheduleJobs(ctx, "bench", populate.ScheduleOpts{})
	if err != nil {
		return err
	}
	d := time.Since(start)
	// The target is for a million keys; other sizes are held to it pro rata.
	target := scheduleTarget * float64(b.o.keys) / 1e6
	fmt.Fprintf(b.out, "schedule_jobs: %d keys (jobs rows + feed job) in %.2f s = %.0f keys/s  target <= %.3g s  ratio (target/ours) %5.1f %%\n",
		res.Scheduled, d.Seconds(), float64(res.Scheduled)/d.Seconds(), target, 100*target/d.Seconds())
	fmt.Fprintf(b.out, "  floor: the same rows written by a bare INSERT … SELECT into a copy of the jobs table in %.2f s  ratio (floor/ours) %5.1f %%\n",
		floor.Seconds(), 100*floor.Seconds()/d.Seconds())
	return nil
}

// scheduleFloor times the least that writing o.keys scheduled jobs rows costs on this machine
// now: one INSERT … SELECT of every key of bench_src, its jsonb and hash built once, into a copy
// of the jobs table with its indexes, without looking for keys already in the target or the jobs
// table. The copy is dropped after.
func (b *bench) scheduleFloor(ctx context.Context) (time.Duration, error) {
	if _, err := b.pool.Exec(ctx, `CREATE TABLE schedule_floor (LIKE jobs INCLUDING ALL)`); err != nil {
		return 0, fmt.Errorf("create the floor's table: %w", err)
	}
	start := time.Now()
	_, err := b.pool.Exec(ctx, `INSERT INTO schedule_floor (table_name, key_hash, status, key, host, pid, run_metadata, enqueued)
		SELECT 'bench', md5(key::text), 'scheduled', key, 'bench', 0, NULL, false
		FROM (SELECT jsonb_build_object('k', k) AS key FROM bench_src OFFSET 0) s`)
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("the floor's insert: %w", err)
	}
	if _, err := b.pool.Exec(ctx, `DROP TABLE schedule_floor`); err != nil {
		return 0, fmt.Errorf("drop the floor's table: %w", err)
	}
	// Let the floor's WAL be checkpointed before ours starts, so that ours does not pay for it.
	if _, err := b.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return 0, fmt.Errorf("checkpoint after the floor: %w", err)
	}
	return d, nil
}

// feed measures the feeder enqueueing the makes of o.jobs scheduled keys (its FEED_AHEAD is
// o.jobs here), a chunk per transaction, as the populate_feed worker does.
func (b *bench) feed(ctx context.Context) error {
	start := time.Now()
	res, err := b.engine.Feed(ctx, "bench")
	if err != nil {
		return err
	}
	d := time.Since(start)
	fmt.Fprintf(b.out, "feed: %d makes enqueued in %.2f s = %.0f keys/s (the rate it can keep FEED_AHEAD makes waiting at)\n",
		res.Enqueued, d.Seconds(), float64(res.Enqueued)/d.Seconds())
	return nil
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(database url)"
}

func ignoreNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

func atomicAdd(n *int64) { atomic.AddInt64(n, 1) }
