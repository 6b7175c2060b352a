package populate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/queue"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	// testdb.Tx keeps one pool on the shared database for the whole test binary.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"))
}

// testBundle is a fresh database with the pair pipeline: manual table src (a, b, v) and computed
// table dst (a, b, v, doubled) made by copying v twice. dst's v is a secondary column named like
// src's, which the antijoin must ignore (DataJoint #1405).
type testBundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	engine *Engine
	calls  *callLog
}

// callLog records every make call, in order.
type callLog struct {
	mu   sync.Mutex
	keys []string
}

func (l *callLog) add(k Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, fmt.Sprintf("%v/%v", k["a"], k["b"]))
}

func (l *callLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}

func setup(t *testing.T, cfg Config, tables ...Table) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := testdb.NewPool(t, "populate_worker")
	_, err := pool.Exec(ctx, `
		CREATE TABLE src (a int, b int, v int NOT NULL, PRIMARY KEY (a, b));
		CREATE TABLE dst (a int, b int, v int NOT NULL DEFAULT -1, doubled int NOT NULL, PRIMARY KEY (a, b));
		CREATE TABLE side_effects (note text)`)
	require.NoError(t, err)
	ins, err := queue.NewInserter(pool, queue.PopulateWorker)
	require.NoError(t, err)
	b := &testBundle{ctx: ctx, pool: pool, calls: &callLog{}}
	reg := NewRegistry()
	if len(tables) == 0 {
		tables = []Table{b.pairTable()}
	}
	for _, tb := range tables {
		require.NoError(t, reg.Register(tb))
	}
	require.NoError(t, reg.Check(ctx, pool))
	b.engine = NewEngine(pool, ins, reg, testConfig(cfg))
	return b
}

// pairTable is the default computed table; a src row with v < 0 makes make fail.
func (b *testBundle) pairTable() Table {
	return Table{
		Name: "pair", Target: "dst", PrimaryKey: []string{"a", "b"},
		KeySource: "SELECT a, b FROM src", Upstream: []string{"src"},
		Make: func(ctx context.Context, tx pgx.Tx, key Key) ([]Row, error) {
			b.calls.add(key)
			a, _ := key.Int64("a")
			bb, _ := key.Int64("b")
			var v int
			if err := tx.QueryRow(ctx, `SELECT v FROM src WHERE a = $1 AND b = $2`, a, bb).Scan(&v); err != nil {
				return nil, err
			}
			if v < 0 {
				return nil, &MakeError{Class: "ValueError", Message: fmt.Sprintf("negative v %d", v), Stack: "pair.make"}
			}
			return []Row{{"doubled": 2 * v}}, nil
		},
	}
}

// insertSrc adds rows (a, b, v) to src.
func (b *testBundle) insertSrc(t *testing.T, rows ...[3]int) {
	t.Helper()
	for _, r := range rows {
		_, err := b.pool.Exec(b.ctx, `INSERT INTO src (a, b, v) VALUES ($1, $2, $3)`, r[0], r[1], r[2])
		require.NoError(t, err)
	}
}

// grid inserts src rows a in 1..n, b = 1, v = a.
func (b *testBundle) grid(t *testing.T, n int) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, `INSERT INTO src SELECT a, 1, a FROM generate_series(1, $1) a`, n)
	require.NoError(t, err)
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func (b *testBundle) schedule(t *testing.T, opts ScheduleOpts) ScheduleResult {
	t.Helper()
	res, err := b.engine.ScheduleJobs(b.ctx, "pair", opts)
	require.NoError(t, err)
	return res
}

// feed runs the feeder of pair once (Feed) and returns what it did.
func (b *testBundle) feed(t *testing.T) FeedResult {
	t.Helper()
	res, err := b.engine.Feed(b.ctx, "pair")
	require.NoError(t, err)
	return res
}

func (b *testBundle) hashes(t *testing.T, status Status) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT key_hash FROM jobs WHERE status = $1 ORDER BY key`, status)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// testConfig is cfg with what a test left at zero set as the service sets it, except the
// scheduling interval: tests schedule at will unless they test it.
func testConfig(cfg Config) Config {
	if cfg.MinSchedulingInterval == 0 {
		cfg.MinSchedulingInterval = -1
	}
	if cfg.OrphanTimeout == 0 {
		cfg.OrphanTimeout = 2 * time.Minute
	}
	if cfg.FeedAhead == 0 {
		cfg.FeedAhead = 5000
	}
	if cfg.FeedEvery == 0 {
		cfg.FeedEvery = 500 * time.Millisecond
	}
	return cfg
}
