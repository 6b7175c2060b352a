package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/apiclient"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// heldBundle is a database with the computed table held (held_src → held_dst) made by an HTTP
// function that answers key k after hold(k), or never when hold(k) is negative, until its caller
// goes away. entered receives each call's key.
type heldBundle struct {
	dbURL      string
	tablesFile string
	pool       *pgxpool.Pool
	entered    chan int
	calls      atomic.Int32
	// abandoned counts the calls whose caller went away before the answer.
	abandoned atomic.Int32
}

func setupHeld(t *testing.T, keys int, hold func(k int) time.Duration) *heldBundle {
	t.Helper()
	b := &heldBundle{dbURL: testdb.New(t), entered: make(chan int, 100)}
	b.pool = testdb.NewPoolFor(t, b.dbURL)
	testOver := make(chan struct{})
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Key struct{ K int } }
		_ = json.NewDecoder(r.Body).Decode(&req)
		b.calls.Add(1)
		b.entered <- req.Key.K
		d := hold(req.Key.K)
		var after <-chan time.Time
		if d >= 0 {
			after = time.After(d)
		}
		select {
		case <-r.Context().Done():
			b.abandoned.Add(1)
			return
		case <-testOver:
			return
		case <-after:
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"rows": []map[string]int{{"v": 7}}})
	}))
	t.Cleanup(fn.Close)
	t.Cleanup(func() { close(testOver) })
	b.tablesFile = httpTable(t, b.pool, "held", fn.URL)
	_, err := b.pool.Exec(context.Background(), `INSERT INTO populate_worker.held_src SELECT generate_series(1, $1::int)`, keys)
	require.NoError(t, err)
	return b
}

func (b *heldBundle) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

// config is a replica making only keys of populate runs, two at a time.
func (b *heldBundle) config() Config {
	return Config{Common: servicetest.Config(b.dbURL), TablesFile: b.tablesFile,
		Settings: wiring.Settings{MakeWorkers: 2, FeedOff: true, MinSchedulingInterval: time.Millisecond, RunWatchEvery: 20 * time.Millisecond}}
}

// startAndStop runs a replica with cfg, calls use with its base URL once it serves, and stops it.
func (b *heldBundle) startAndStop(t *testing.T, cfg Config, use func(base string)) {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runTest(ctx, cfg, ln, io.Discard) }()
	base := "http://" + ln.Addr().String()
	require.Eventually(t, func() bool { return apiclient.Answers(t.Context(), base+"/readyz") }, 15*time.Second, 20*time.Millisecond)
	use(base)
	stop()
	require.NoError(t, <-done)
}

// riverClient is an insert-only River client on the bundle's populate_worker schema, for the
// calls River UI makes (JobRetry, JobCancel, JobDelete).
func (b *heldBundle) riverClient(t *testing.T) *queue.Client {
	t.Helper()
	c, err := queue.NewInserter(b.pool, queue.PopulateWorker)
	require.NoError(t, err)
	return c
}

// jobIDs lists the ids of the River jobs of kind in state, oldest first.
func (b *heldBundle) jobIDs(t *testing.T, kind, state string) []int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT id FROM populate_worker.river_job
		WHERE kind = $1 AND state = $2::text::populate_worker.river_job_state ORDER BY id`, kind, state)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

// startRunAndStop starts a populate run of held with processes on a replica that makes nothing
// (MAKE_WORKERS 0), which then stops: the run's first makes are left queued in River.
func (b *heldBundle) startRunAndStop(t *testing.T, processes int) populateResult {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := b.config()
	cfg.MakeWorkers = 0
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runTest(ctx, cfg, ln, io.Discard) }()
	var got populateResult
	require.Eventually(t, func() bool {
		return servicetest.Call(t, http.MethodPost, "http://"+ln.Addr().String()+"/v1/tables/held/populate",
			map[string]any{"processes": processes}, &got) == http.StatusAccepted
	}, 15*time.Second, 50*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	return got
}

// waitEntered waits for n makes to have started and returns their keys.
func (b *heldBundle) waitEntered(t *testing.T, n int) []int {
	t.Helper()
	var keys []int
	for range n {
		select {
		case k := <-b.entered:
			keys = append(keys, k)
		case <-time.After(15 * time.Second):
			t.Fatalf("only %d of %d makes started", len(keys), n)
		}
	}
	return keys
}

// jobMessages counts the jobs table's rows by "status: error_message".
func (b *heldBundle) jobMessages(t *testing.T) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		`SELECT status || coalesce(': ' || error_message, ''), count(*) FROM populate_worker.jobs GROUP BY 1`)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(t, rows.Err())
	return out
}

func TestCancelledRunRecordsKeyboardInterrupt(t *testing.T) {
	t.Parallel()
	b := setupHeld(t, 5, func(int) time.Duration { return -1 })
	cfg := b.config()
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, cfg, ln, stdout)
	})
	var run populateResult
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/populate?wait=0.3",
		map[string]any{"processes": 2, "suppress_errors": true}, &run), "not ended within wait: the running run")
	require.Equal(t, "running", run.State)
	require.Equal(t, 5, run.Remaining)
	b.waitEntered(t, 2)

	path := base + "/v1/populate-runs/" + strconv.FormatInt(run.ID, 10)
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodPost, path+"/cancel", nil, &run))
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, path, nil, &run))
		return run.State != "running"
	}, 15*time.Second, 20*time.Millisecond)
	require.Equal(t, "interrupted", run.State)
	require.Equal(t, 0, run.Made)
	require.Equal(t, 2, run.Errors)
	require.Zero(t, run.Remaining)
	require.Len(t, run.ErrorList, 2)
	for _, e := range run.ErrorList {
		require.Equal(t, "KeyboardInterrupt", e.ErrorMessage, "DataJoint records Ctrl-C as the bare class")
	}
	require.Equal(t, map[string]int{"error: KeyboardInterrupt": 2, "scheduled": 3}, b.jobMessages(t),
		"the keys the run had not started stay scheduled")
	require.Equal(t, int32(2), b.calls.Load())
}

// TestCancelledRunWaitingOnAnotherRunsMakesEnds cancels a run whose keys wait on another run's
// make job (enqueued, not started: one make worker, busy) and on its own jobs, none started: it
// ends interrupted at once, having made nothing, while the other run goes on holding its keys;
// cancelling that one too ends it, its running make cut off.
// TestARunOnALiveFleetMakesItsKeys: the feeder has queued a background make for every key when
// a populate run of them starts, as on a fleet with the feeder on. The run makes every key
// itself: the background makes, fetched beside the run's, yield to it, and the feeder leaves
// the run's keys alone. Its progress counts them made, never made elsewhere.
func TestARunOnALiveFleetMakesItsKeys(t *testing.T) {
	t.Parallel()
	const keys = 30
	b := setupHeld(t, keys, func(int) time.Duration { return 5 * time.Millisecond })
	queued := b.config()
	queued.FeedOff, queued.MakeWorkers = false, 0
	var run populateResult
	b.startAndStop(t, queued, func(base string) {
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/schedule",
			map[string]any{"min_scheduling_interval": 0}, nil))
		require.Eventually(t, func() bool {
			return b.count(t, `SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make' AND state = 'available'`) == keys
		}, 15*time.Second, 20*time.Millisecond, "the feeder queues a make per key, which nothing works yet")
		require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/populate",
			map[string]any{"schedule_jobs": false, "processes": 1}, &run))
	})

	live := b.config()
	live.FeedOff, live.MakeWorkers = false, 3
	var got runCounts
	b.startAndStop(t, live, func(base string) {
		require.Eventually(t, func() bool {
			require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/v1/populate-runs/"+strconv.FormatInt(run.ID, 10), nil, &got))
			return got.State != "running"
		}, time.Minute, 20*time.Millisecond)
	})
	require.Equal(t, []any{"done", keys, keys, 0, 0}, []any{got.State, got.Total, got.SuccessCount, got.MadeElsewhere, got.Errors},
		"the run made every key itself")
	require.EqualValues(t, keys, b.calls.Load(), "each key made once")
	require.Equal(t, keys, b.count(t, `SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make'
		AND args ->> 'run_id' IS NULL AND state IN ('completed', 'cancelled')`), "every background make ended: yielded, or found its key made")
	require.Positive(t, b.count(t, `SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make'
		AND args ->> 'run_id' IS NULL AND metadata -> 'output' ->> 'outcome' = 'yielded_to_run'`), "some yielded to the run")
}

func TestCancelledRunWaitingOnAnotherRunsMakesEnds(t *testing.T) {
	t.Parallel()
	b := setupHeld(t, 4, func(int) time.Duration { return -1 })
	cfg := b.config()
	cfg.MakeWorkers = 1
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, cfg, ln, stdout)
	})
	get := func(id int64) runCounts {
		var r runCounts
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/v1/populate-runs/"+strconv.FormatInt(id, 10), nil, &r))
		return r
	}
	cancelAndWait := func(id int64) runCounts {
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodPost, base+"/v1/populate-runs/"+strconv.FormatInt(id, 10)+"/cancel", nil, nil))
		var r runCounts
		require.Eventually(t, func() bool { r = get(id); return r.State != "running" }, 15*time.Second, 20*time.Millisecond)
		return r
	}

	var first, second runCounts
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/populate",
		map[string]any{"processes": 2, "suppress_errors": true}, &first))
	require.Equal(t, []int{1}, b.waitEntered(t, 1), "the one worker makes key 1; key 2's job waits")
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/populate",
		map[string]any{"processes": 3, "schedule_jobs": false}, &second))
	second = get(second.ID)
	require.Equal(t, []any{"running", 3}, []any{second.State, second.Total},
		"keys 2, 3 and 4, each with a job of the second run's (key 2's beside the first run's); key 1 is reserved")

	second = cancelAndWait(second.ID)
	require.Equal(t, []any{"interrupted", 0, 0, 3}, []any{second.State, second.SuccessCount, second.Errors, second.Dropped})
	require.Equal(t, "running", get(first.ID).State, "the first run goes on")

	first = cancelAndWait(first.ID)
	require.Equal(t, []any{"interrupted", 0, 1}, []any{first.State, first.SuccessCount, first.Errors},
		"its running make cut off (KeyboardInterrupt), the rest dropped")
	require.Equal(t, 1, b.jobMessages(t)["error: KeyboardInterrupt"])
}

func TestSIGTERMRecordsSystemExitAndInterruptsTheRun(t *testing.T) {
	t.Parallel()
	// Key 1 ends within the soft-stop budget, key 2 never does.
	b := setupHeld(t, 5, func(k int) time.Duration {
		if k == 1 {
			return 300 * time.Millisecond
		}
		return -1
	})
	cfg := b.config()
	cfg.SoftStopTimeout, cfg.ShutdownTimeout = 1500*time.Millisecond, 10*time.Second
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runTest(ctx, cfg, ln, io.Discard) }()
	var run populateResult
	require.Eventually(t, func() bool {
		return servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/populate",
			map[string]any{"processes": 2, "suppress_errors": true}, &run) == http.StatusAccepted
	}, 15*time.Second, 50*time.Millisecond)
	require.ElementsMatch(t, []int{1, 2}, b.waitEntered(t, 2))
	sigterm()
	require.NoError(t, <-done)

	require.Equal(t, map[string]int{"error: SystemExit: SIGTERM received": 1, "scheduled": 3}, b.jobMessages(t),
		"key 1 finished within the budget; key 2 was cut off; the rest were never started")
	var state, stopping string
	var made, errs, dropped int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT state, stopping, made, errors, dropped
		FROM populate_worker.populate_runs WHERE id = $1`, run.ID).Scan(&state, &stopping, &made, &errs, &dropped))
	require.Equal(t, []any{"interrupted", "sigterm", 1, 1, 3}, []any{state, stopping, made, errs, dropped})
}

// TestRunOutlivesTheReplicaThatAcceptedIt starts a run on a replica that makes no keys and stops
// it; another replica makes the run's keys and ends it.
func TestRunOutlivesTheReplicaThatAcceptedIt(t *testing.T) {
	t.Parallel()
	const keys = 4
	b := setupHeld(t, keys, func(int) time.Duration { return 0 })
	got := b.startRunAndStop(t, 2)

	other := b.config()
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, other, ln, stdout)
	})
	require.Eventually(t, func() bool {
		servicetest.Call(t, http.MethodGet, base+"/v1/populate-runs/"+strconv.FormatInt(got.ID, 10), nil, &got)
		return got.State == "done"
	}, 15*time.Second, 50*time.Millisecond)
	require.Equal(t, keys, got.Made)
	require.Equal(t, keys, b.count(t, `SELECT count(*) FROM populate_worker.held_dst`))
}

// A run whose populate_make jobs ended without settling their keys ends: River discarded them
// (their attempts spent on infrastructure errors, outside the transaction that settles a key), or
// they were cancelled or deleted in River UI while they waited. The reclaim sweep counts such a key
// as an error naming the job, and the run, without suppress_errors, fails (its other keys dropped).
func TestRunEndsWhenItsMakeJobsEndWithoutMakingTheirKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, b *heldBundle, client *queue.Client, ids []int64)
		want string
	}{
		{"DiscardedByRiver", func(t *testing.T, b *heldBundle, _ *queue.Client, ids []int64) {
			require.NoError(t, pgx.BeginFunc(context.Background(), b.pool, func(tx pgx.Tx) error {
				for _, id := range ids {
					queuetest.Finish(context.Background(), t, tx, "populate_worker", id, rivertype.JobStateDiscarded)
				}
				return nil
			}))
		}, `^populate_make job \d+ discarded without making the key$`},
		{"CancelledInRiverUI", func(t *testing.T, _ *heldBundle, client *queue.Client, ids []int64) {
			for _, id := range ids {
				_, err := client.JobCancel(context.Background(), id)
				require.NoError(t, err)
			}
		}, `^populate_make job \d+ cancelled without making the key$`},
		{"DeletedInRiverUI", func(t *testing.T, _ *heldBundle, client *queue.Client, ids []int64) {
			for _, id := range ids {
				_, err := client.JobDelete(context.Background(), id)
				require.NoError(t, err)
			}
		}, `^populate_make job: none left for the key; it was not made$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupHeld(t, 4, func(int) time.Duration { return 0 })
			cfg := b.config()
			cfg.MakeWorkers = 0 // nothing makes the keys: their jobs stay waiting until ended below
			cfg.ReclaimEvery = 50 * time.Millisecond
			base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
				return runTest(ctx, cfg, ln, stdout)
			})
			var got populateResult
			require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/populate",
				map[string]any{"processes": 2}, &got))
			tc.end(t, b, b.riverClient(t), b.jobIDs(t, queue.PopulateMakeArgs{}.Kind(), "available"))
			require.Eventually(t, func() bool {
				servicetest.Call(t, http.MethodGet, base+"/v1/populate-runs/"+strconv.FormatInt(got.ID, 10), nil, &got)
				return got.State != "running"
			}, 15*time.Second, 50*time.Millisecond)
			require.Equal(t, "failed", got.State)
			require.Equal(t, 1, got.Errors)
			require.Zero(t, got.Remaining)
			require.Len(t, got.ErrorList, 1)
			require.Regexp(t, tc.want, got.ErrorList[0].ErrorMessage)
		})
	}
}

// An infrastructure error on the last attempt of a run's make job ends the key as an error of the
// run and the job as discarded in one transaction, without waiting for the reclaim sweep.
func TestRunKeyFailsWithItsMakeJobsLastAttempt(t *testing.T) {
	t.Parallel()
	b := setupHeld(t, 3, func(int) time.Duration { return 0 })
	ctx := context.Background()
	got := b.startRunAndStop(t, 1)
	// The key's reservation fails as a database that refuses it would, and its job has one attempt.
	_, err := b.pool.Exec(ctx, `CREATE FUNCTION populate_worker.refuse_reserve() RETURNS trigger LANGUAGE plpgsql
		AS $$ BEGIN RAISE EXCEPTION 'injected: reservation refused'; END $$`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `CREATE TRIGGER refuse_reserve BEFORE UPDATE ON populate_worker.jobs FOR EACH ROW
		WHEN (NEW.status = 'reserved') EXECUTE FUNCTION populate_worker.refuse_reserve()`)
	require.NoError(t, err)
	require.Equal(t, 1, queuetest.SetJobs(ctx, t, b.pool, "populate_worker", queue.PopulateMakeArgs{}.Kind(),
		queuetest.Patch{MaxAttempts: queuetest.Ptr(1)}))

	other := b.config()
	other.ReclaimEvery = time.Hour
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, other, ln, stdout)
	})
	require.Eventually(t, func() bool {
		servicetest.Call(t, http.MethodGet, base+"/v1/populate-runs/"+strconv.FormatInt(got.ID, 10), nil, &got)
		return got.State != "running"
	}, 15*time.Second, 50*time.Millisecond)
	require.Equal(t, "failed", got.State)
	require.Equal(t, 1, got.Errors)
	require.Len(t, got.ErrorList, 1)
	const want = `^populate_make job \d+ discarded without making the key: make held/\w+: attempt 1 of 1: .*injected: reservation refused`
	require.Regexp(t, want, got.ErrorList[0].ErrorMessage)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make'
		AND state = 'discarded' AND errors[array_upper(errors, 1)] ->> 'error' LIKE '%injected: reservation refused%'`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make'
		AND state NOT IN ('completed', 'discarded', 'cancelled')`))
}

// A background make whose job River would discard (an infrastructure error on its last attempt,
// before the key's reservation) gives its key back to the feeder in the transaction that discards
// the job: once the database accepts reservations again the key is made, without the reclaim.
// Its waits are hang guards of a minute: under a loaded CI machine 15 s was once too short.
func TestBackgroundMakesLastAttemptGivesItsKeyBackToTheFeeder(t *testing.T) {
	t.Parallel()
	b := setupHeld(t, 2, func(int) time.Duration { return 0 })
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE FUNCTION populate_worker.refuse_reserve() RETURNS trigger LANGUAGE plpgsql
			AS $$ BEGIN RAISE EXCEPTION 'injected: reservation refused'; END $$`,
		`CREATE TRIGGER refuse_reserve BEFORE UPDATE ON populate_worker.jobs FOR EACH ROW
			WHEN (NEW.status = 'reserved') EXECUTE FUNCTION populate_worker.refuse_reserve()`,
	} {
		_, err := b.pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	// A replica that makes nothing schedules the keys and feeds their makes, then stops; every
	// make job gets one attempt, so the first refusal is its last.
	cfg := b.config()
	cfg.MakeWorkers, cfg.FeedOff = 0, false
	b.startAndStop(t, cfg, func(base string) {
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodPost, base+"/v1/tables/held/schedule", map[string]any{}, nil))
		require.Eventually(t, func() bool {
			return len(b.jobIDs(t, queue.PopulateMakeArgs{}.Kind(), "available")) == 2
		}, time.Minute, 20*time.Millisecond, "the feeder enqueues both makes")
	})
	require.Equal(t, 2, queuetest.SetJobs(ctx, t, b.pool, "populate_worker", queue.PopulateMakeArgs{}.Kind(),
		queuetest.Patch{MaxAttempts: queuetest.Ptr(1)}))

	cfg.MakeWorkers = 1
	cfg.ReclaimEvery = time.Hour
	servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, cfg, ln, stdout)
	})
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(DISTINCT args ->> 'key_hash') FROM populate_worker.river_job
			WHERE kind = 'populate_make' AND state = 'discarded'
				AND errors[array_upper(errors, 1)] ->> 'error' LIKE '%injected: reservation refused%'`) == 2
	}, time.Minute, 20*time.Millisecond)

	_, err := b.pool.Exec(ctx, `DROP TRIGGER refuse_reserve ON populate_worker.jobs`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM populate_worker.held_dst`) == 2
	}, time.Minute, 20*time.Millisecond, "the feeder enqueues the keys again")
	require.Empty(t, b.jobMessages(t), "a made key's job is deleted")
}
