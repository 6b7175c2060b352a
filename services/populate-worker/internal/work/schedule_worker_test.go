package work

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/examples"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	engine *populate.Engine
}

func setup(t *testing.T, cfg populate.Config) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := testdb.NewPool(t, "populate_worker")
	reg := populate.NewRegistry()
	require.NoError(t, examples.Register(reg, "http://127.0.0.1:9/unused"))
	ins, err := queue.NewInserter(pool, queue.PopulateWorker)
	require.NoError(t, err)
	_, err = examples.Seed(ctx, pool, 3, 0)
	require.NoError(t, err)
	if cfg.MinSchedulingInterval == 0 {
		cfg.MinSchedulingInterval = time.Hour
	}
	cfg.OrphanTimeout, cfg.FeedEvery = 2*time.Minute, 500*time.Millisecond
	if cfg.FeedAhead == 0 {
		cfg.FeedAhead = 5000
	}
	return &testBundle{ctx: ctx, pool: pool, engine: populate.NewEngine(pool, ins, reg, cfg)}
}

func TestScheduleWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, populate.Config{})
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &ScheduleWorker{Engine: b.engine})
	work := func(args queue.PopulateScheduleArgs, opts ...*river.InsertOpts) river.EventKind {
		tx, err := b.pool.Begin(b.ctx)
		require.NoError(t, err)
		defer tx.Rollback(b.ctx) // only the test's River job was written
		res, err := w.Work(b.ctx, t, tx, args, append(opts, nil)[0])
		if err != nil {
			return river.EventKind("error: " + err.Error())
		}
		return res.EventKind
	}

	require.Equal(t, river.EventKindJobCompleted, work(queue.PopulateScheduleArgs{Table: examples.Stats}))
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM jobs WHERE table_name = $1 AND status = 'scheduled'`, examples.Stats).Scan(&n))
	require.Equal(t, 3, n)
	require.Equal(t, river.EventKindJobSnoozed, work(queue.PopulateScheduleArgs{Table: examples.Stats, Cleanup: true}),
		"inside min_scheduling_interval the job waits for the next interval")
	require.Equal(t, river.EventKindJobCancelled, work(queue.PopulateScheduleArgs{Table: "nope"}))

	// River UI's Retry of a schedule job that ran (it carries that run's output) schedules now,
	// inside min_scheduling_interval: a retried schedule never completes having done nothing.
	_, err := examples.Seed(b.ctx, b.pool, 2, 0)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, work(queue.PopulateScheduleArgs{Table: examples.Stats}), "a new job waits")
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM jobs WHERE table_name = $1 AND status = 'scheduled'`, examples.Stats).Scan(&n))
	require.Equal(t, 3, n)
	retried := &river.InsertOpts{Metadata: []byte(`{"output": [{"table": "example_signal_stats", "scheduled": 3}]}`)}
	require.Equal(t, river.EventKindJobCompleted, work(queue.PopulateScheduleArgs{Table: examples.Stats}, retried))
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM jobs WHERE table_name = $1 AND status = 'scheduled'`, examples.Stats).Scan(&n))
	require.Equal(t, 5, n, "the retried job ran schedule_jobs")
}
