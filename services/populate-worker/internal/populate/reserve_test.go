package populate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/shared/postgres"
)

// TestReserve is DataJoint's reserve test: reserve, refuse a second reserve, complete, reserve
// again, error, refuse, clear.
func TestReserve(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.grid(t, 1)
	b.schedule(t, ScheduleOpts{})
	hash := b.hashes(t, StatusScheduled)[0]
	tbl, err := b.engine.tables.Get("pair")
	require.NoError(t, err)
	c1, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer c1.Release()

	r, err := b.engine.reserveKey(b.ctx, c1, tbl, hash, b.engine.runMetadata("test"), false, false)
	require.NoError(t, err)
	require.NotNil(t, r)
	again, err := b.engine.reserveKey(b.ctx, c1, tbl, hash, nil, false, false)
	require.NoError(t, err)
	require.Nil(t, again, "a reserved key is refused")

	job, err := JobGet(b.ctx, b.pool, "pair", hash)
	require.NoError(t, err)
	require.Equal(t, StatusReserved, job.Status)
	require.Equal(t, r.backend, job.ConnectionID)
	require.Contains(t, string(job.RunMetadata), `"worker_id"`)

	require.NoError(t, pgx.BeginFunc(b.ctx, c1, func(tx pgx.Tx) error {
		require.NoError(t, lockReservation(b.ctx, tx, r))
		_, err := finishError(b.ctx, tx, r, &MakeError{Class: "ValueError", Message: "boom"})
		return err
	}))
	refused, err := b.engine.reserveKey(b.ctx, c1, tbl, hash, nil, false, false)
	require.NoError(t, err)
	require.Nil(t, refused, "an error key is refused")

	_, err = b.engine.Reschedule(b.ctx, "pair", hash)
	require.NoError(t, err)
	r, err = b.engine.reserveKey(b.ctx, c1, tbl, hash, nil, false, false)
	require.NoError(t, err)
	require.NotNil(t, r, "a rescheduled key can be reserved again")
	require.NoError(t, pgx.BeginFunc(b.ctx, c1, func(tx pgx.Tx) error { return b.engine.finishSuccess(b.ctx, tx, r) }))
	require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`), "completed jobs are removed")
}

func TestConcurrentWorkersMakeEachKeyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.grid(t, 200)
	b.schedule(t, ScheduleOpts{})
	hashes := b.hashes(t, StatusScheduled)

	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range hashes {
				h := hashes[(i*7+w*13)%len(hashes)] // every worker tries every key, in its own order
				_, err := b.engine.MakeKey(b.ctx, Background, "pair", h, MakeOpts{}, nil)
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	calls := b.calls.list()
	require.Len(t, calls, 200, "each key made exactly once")
	seen := map[string]bool{}
	for _, k := range calls {
		require.False(t, seen[k], "key %s made twice", k)
		seen[k] = true
	}
	require.Equal(t, 200, b.count(t, `SELECT count(*) FROM dst`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
}

func TestReclaim(t *testing.T) {
	t.Parallel()

	t.Run("DeadConnection", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 3)
		b.schedule(t, ScheduleOpts{})
		b.feed(t)
		hash := b.hashes(t, StatusScheduled)[0]

		// A worker reserves the key on its own connection and dies mid-make: its connection
		// closes, as a SIGKILLed process's does.
		dead, err := pgx.Connect(b.ctx, b.pool.Config().ConnString())
		require.NoError(t, err)
		_, err = dead.Exec(b.ctx, `UPDATE populate_worker.jobs SET status = 'reserved', connection_id = pg_backend_pid(),
			run_metadata = jsonb_build_object('lease_until', now() + interval '1 hour') WHERE key_hash = $1`, hash)
		require.NoError(t, err)
		n, err := b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a live reservation is left alone")
		require.NoError(t, dead.Close(b.ctx))

		require.Eventually(t, func() bool {
			n, err := b.engine.Reclaim(b.ctx)
			require.NoError(t, err)
			return n == 1
		}, 5*time.Second, 20*time.Millisecond)
		require.Equal(t, 4, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make'`), "the reclaim enqueues a make")
		require.Equal(t, 4, b.drainMakes(t, 10))
		require.Len(t, b.calls.list(), 3, "the reclaimed key is made once")
	})
	t.Run("FetchedButNeverReserved", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{OrphanTimeout: time.Minute})
		b.grid(t, 2)
		b.schedule(t, ScheduleOpts{})
		b.feed(t)
		// A replica fetched both make jobs from River and died before reserving their keys: River
		// shows them running under a dead client, their keys stay scheduled. It fetched the first
		// longer than ORPHAN_TIMEOUT ago.
		dead := queuetest.FetchAsDeadProcess(b.ctx, t, b.pool, "", queue.QueuePopulate, "dead-client", 10)
		require.Len(t, dead, 2)
		queuetest.SetJob(b.ctx, t, b.pool, "", dead[0].ID, queuetest.Patch{AttemptedAt: queuetest.Ptr(time.Now().Add(-2 * time.Minute))})
		n, err := b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "only the job fetched longer than ORPHAN_TIMEOUT ago")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make' AND state = 'available'`))
		n, err = b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a key with a waiting copy is left to it")
	})
	t.Run("ExpiredLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 1)
		b.schedule(t, ScheduleOpts{})
		_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET status = 'reserved', connection_id = pg_backend_pid(),
			run_metadata = jsonb_build_object('lease_until', now() - interval '1 second')`)
		require.NoError(t, err)
		n, err := b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Empty(t, b.hashes(t, StatusReserved))
	})
	t.Run("ReclaimedReservationNeverCommits", func(t *testing.T) {
		t.Parallel()
		entered, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		tbl := Table{
			Name: "pair", Target: "dst", PrimaryKey: []string{"a", "b"}, KeySource: "SELECT a, b FROM src",
			Fetch: func(context.Context, postgres.DBTX, Key) (any, error) { return 1, nil },
			Compute: func(ctx context.Context, key Key, _ any) ([]Row, error) {
				if calls.Add(1) == 1 {
					close(entered)
					<-release
				}
				return []Row{{"doubled": 1}}, nil
			},
		}
		b := setup(t, Config{}, tbl)
		b.grid(t, 1)
		b.schedule(t, ScheduleOpts{})
		hash := b.hashes(t, StatusScheduled)[0]
		done := make(chan error, 1)
		go func() {
			end, err := b.engine.MakeKey(b.ctx, Background, "pair", hash, MakeOpts{}, nil)
			if err == nil && end.Outcome != OutcomeSkipped {
				err = fmt.Errorf("the stale worker's make ended %s", end)
			}
			done <- err
		}()
		<-entered
		_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET run_metadata = jsonb_build_object('lease_until', now() - interval '1 second')`)
		require.NoError(t, err)
		n, err := b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		end, err := b.engine.MakeKey(b.ctx, Background, "pair", hash, MakeOpts{}, nil)
		require.NoError(t, err)
		require.Equal(t, OutcomeMade, end.Outcome)
		close(release)
		require.NoError(t, <-done, "the stale worker ends its River job without writing, saying why")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dst`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
	})
}
