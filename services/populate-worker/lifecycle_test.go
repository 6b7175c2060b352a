package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/procattr"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// slowBundle is a database with the computed table slow (slow_src → slow_dst) made by an HTTP
// function whose first call hangs until its caller goes away.
type slowBundle struct {
	dbURL      string
	tablesFile string
	pool       *pgxpool.Pool
	entered    chan struct{}
	answered   atomic.Int32
}

func setupSlow(t *testing.T) *slowBundle {
	t.Helper()
	b := &slowBundle{dbURL: testdb.New(t), entered: make(chan struct{})}
	b.pool = testdb.NewPoolFor(t, b.dbURL)
	var calls atomic.Int32
	testOver := make(chan struct{})
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			close(b.entered)
			select {
			case <-r.Context().Done():
			case <-testOver:
			}
			return
		}
		b.answered.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"rows": []map[string]int{{"v": 7}}})
	}))
	t.Cleanup(fn.Close)
	t.Cleanup(func() { close(testOver) })
	b.tablesFile = httpTable(t, b.pool, "slow", fn.URL)
	return b
}

// httpTable creates the tables <name>_src (k int) and <name>_dst (k int, v int) and writes a
// tables file registering the computed table name, made by the HTTP function at url.
func httpTable(t *testing.T, pool *pgxpool.Pool, name, url string) string {
	t.Helper()
	_, err := pool.Exec(context.Background(), fmt.Sprintf(`CREATE TABLE populate_worker.%[1]s_src (k int PRIMARY KEY);
		CREATE TABLE populate_worker.%[1]s_dst (k int PRIMARY KEY, v int NOT NULL)`, name))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "tables.json")
	tables := fmt.Sprintf(`[{"name": %[1]q, "target": "%[1]s_dst", "primary_key": ["k"],
		"key_source": "SELECT k FROM %[1]s_src", "upstream": ["%[1]s_src"], "function_url": %[2]q}]`, name, url)
	require.NoError(t, os.WriteFile(file, []byte(tables), 0o600))
	return file
}

func (b *slowBundle) config() Config {
	return Config{Common: servicetest.Config(b.dbURL), TablesFile: b.tablesFile,
		Settings: wiring.Settings{MakeWorkers: 1, MinSchedulingInterval: time.Millisecond, ReclaimEvery: 100 * time.Millisecond}}
}

func (b *slowBundle) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

// insertWhenListening waits for a service's change listener, inserts an upstream row and waits
// for the make to start.
func (b *slowBundle) insertWhenListening(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND rtrim(query, E' \n') LIKE '%LISTEN populate_change'`) == 1
	}, 15*time.Second, 20*time.Millisecond, "the worker starts listening")
	_, err := b.pool.Exec(context.Background(), `INSERT INTO populate_worker.slow_src VALUES (1)`)
	require.NoError(t, err)
	select {
	case <-b.entered:
	case <-time.After(15 * time.Second):
		t.Fatal("the worker never started the make")
	}
}

// TestHelperWorkerProcess is the worker the kill tests start in a process of its own and SIGKILL;
// it only runs there.
func TestHelperWorkerProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv("POPULATE_HELPER_DB") == "" {
		t.Skip("run by TestKilledWorkerIsReclaimed")
	}
	workers := 1
	if n, err := strconv.Atoi(os.Getenv("POPULATE_HELPER_MAKE_WORKERS")); err == nil {
		workers = n
	}
	cfg := Config{Common: servicetest.Config(os.Getenv("POPULATE_HELPER_DB")), TablesFile: os.Getenv("POPULATE_HELPER_TABLES"), HTTPAddr: "127.0.0.1:0",
		Settings: wiring.Settings{MakeWorkers: workers, MinSchedulingInterval: time.Millisecond}}
	cfg.WorkerID = os.Getenv("POPULATE_HELPER_WORKER_ID")
	// Its log goes to the test process's output, which a test that waits on it can show.
	require.NoError(t, runTest(context.Background(), cfg, nil, os.Stdout)) // until SIGKILL
}

func TestKilledWorkerIsReclaimed(t *testing.T) {
	t.Parallel()
	b := setupSlow(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperWorkerProcess$")
	procattr.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "POPULATE_HELPER_DB="+b.dbURL, "POPULATE_HELPER_TABLES="+b.tablesFile)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	b.insertWhenListening(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM populate_worker.jobs WHERE status = 'reserved'`))
	require.NoError(t, cmd.Process.Kill()) // SIGKILL mid-make
	_ = cmd.Wait()

	servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, b.config(), ln, stdout)
	})
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM populate_worker.slow_dst`) == 1
	}, 20*time.Second, 50*time.Millisecond, "another worker reclaims the key and makes it")
	require.Equal(t, int32(1), b.answered.Load(), "made once")
	require.Zero(t, b.count(t, `SELECT count(*) FROM populate_worker.jobs`))
}

func TestSIGTERMRecordsMakesThatOutliveTheBudget(t *testing.T) {
	t.Parallel()
	b := setupSlow(t)
	cfg := b.config()
	cfg.SoftStopTimeout, cfg.ShutdownTimeout = 200*time.Millisecond, 5*time.Second
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runTest(ctx, cfg, ln, io.Discard) }()
	b.insertWhenListening(t)
	sigterm()
	require.NoError(t, <-done)
	var msg string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT status || ': ' || error_message FROM populate_worker.jobs`).Scan(&msg))
	require.Equal(t, "error: SystemExit: SIGTERM received", msg)
}

// TestKilledWithFetchedButUnreservedJobsLeavesNoKeyStuck SIGKILLs a replica whose River client
// has fetched make jobs but not yet reserved their keys (the test holds the jobs rows' locks, so
// the reservations wait), and checks that another replica makes every key within ORPHAN_TIMEOUT
// plus a reclaim period, while River still shows the dead client's jobs running.
func TestKilledWithFetchedButUnreservedJobsLeavesNoKeyStuck(t *testing.T) {
	t.Parallel()
	const keys = 3
	b := setupHeld(t, keys, func(int) time.Duration { return 0 })
	ctx := context.Background()
	// Schedule the keys on a replica that makes nothing; its feeder enqueues their River jobs.
	first := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		cfg := b.config()
		cfg.MakeWorkers, cfg.FeedOff = 0, false
		return runTest(ctx, cfg, ln, stdout)
	})
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodPost, first+"/v1/tables/held/schedule",
		map[string]any{"min_scheduling_interval": 0}, nil))
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make'`) == keys
	}, 10*time.Second, 20*time.Millisecond, "the feeder enqueues every key's make")
	lock, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `SELECT 1 FROM populate_worker.jobs FOR UPDATE`)
	require.NoError(t, err)

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperWorkerProcess$")
	procattr.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "POPULATE_HELPER_DB="+b.dbURL, "POPULATE_HELPER_TABLES="+b.tablesFile,
		"POPULATE_HELPER_MAKE_WORKERS="+strconv.Itoa(keys))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	count := func(sql string) int { return b.count(t, sql) }
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make' AND state = 'running'`) == keys &&
			count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
				AND query LIKE '%UPDATE jobs SET status = ''reserved''%'`) == keys
	}, 20*time.Second, 20*time.Millisecond, "the helper fetched every make job and waits to reserve its key")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	// The server notices a dead client's idle connections at once; those waiting on a lock only
	// when it is granted, so they are ended here as the server would end them.
	_, err = b.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	require.NoError(t, err)
	require.NoError(t, lock.Rollback(ctx))
	require.Equal(t, keys, count(`SELECT count(*) FROM populate_worker.jobs WHERE status = 'scheduled'`))

	const orphan, reclaim = 2 * time.Second, 200 * time.Millisecond
	start := time.Now()
	servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		cfg := b.config()
		cfg.MakeWorkers, cfg.FeedOff, cfg.OrphanTimeout, cfg.ReclaimEvery = 2, false, orphan, reclaim
		return runTest(ctx, cfg, ln, stdout)
	})
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM populate_worker.held_dst`) == keys
	}, orphan+reclaim+10*time.Second, 50*time.Millisecond, "every key is made again")
	t.Logf("all %d keys made %.1f s after the new replica started (ORPHAN_TIMEOUT %s, RECLAIM_EVERY %s)",
		keys, time.Since(start).Seconds(), orphan, reclaim)
	require.Zero(t, count(`SELECT count(*) FROM populate_worker.jobs`))
	require.Equal(t, keys, count(`SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_make' AND state = 'running'`),
		"River itself has not rescued the dead client's jobs (that takes MAKE_TIMEOUT + 1 m)")
}

// TestKilledFeederLeavesNoKeyUnfed SIGKILLs a replica in the middle of a feeder chunk (the keys
// marked enqueued, their River jobs being inserted: a trigger delays the insert) and checks that
// another replica makes every key within a reclaim period, while River still shows the dead
// client's feed job running (River rescues it only after FEED_TIMEOUT, a minute).
func TestKilledFeederLeavesNoKeyUnfed(t *testing.T) {
	t.Parallel()
	const keys = 3
	b := setupHeld(t, keys, func(int) time.Duration { return 0 })
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `CREATE FUNCTION populate_worker.hold_makes() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_sleep(3600); RETURN NEW; END $$;
		CREATE TRIGGER hold_makes BEFORE INSERT ON populate_worker.river_job FOR EACH ROW
			WHEN (NEW.kind = 'populate_make') EXECUTE FUNCTION populate_worker.hold_makes()`)
	require.NoError(t, err)

	// The helper schedules the keys on start (the periodic schedule) and its feeder takes them.
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperWorkerProcess$")
	procattr.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "POPULATE_HELPER_DB="+b.dbURL, "POPULATE_HELPER_TABLES="+b.tablesFile)
	var output syncBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	count := func(sql string) int { return b.count(t, sql) }
	// The chunk has marked its keys and is inserting their River jobs (River's COPY), held by
	// the trigger.
	const feeding = `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
		AND pid <> pg_backend_pid() AND query ILIKE 'copy %river_job%'`
	// A hang guard: the helper process starts, elects a River leader, schedules and feeds, which
	// took over 20 s once in a loaded parallel run, and over a minute twice in fresh-clone CI runs
	// beside the other services' process tests.
	require.Eventually(t, func() bool { return count(feeding) == 1 }, 3*time.Minute, 20*time.Millisecond,
		"the helper's feeder is inside a chunk; the helper's output:\n%s", &output)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	// A busy backend notices its client gone only when it next talks to it; end it as the server
	// would, and let makes be inserted again.
	_, err = b.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()
		AND state = 'active' AND pid <> pg_backend_pid() AND query ILIKE 'copy %river_job%'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `DROP TRIGGER hold_makes ON populate_worker.river_job`)
	require.NoError(t, err)
	require.Equal(t, keys, count(`SELECT count(*) FROM populate_worker.jobs WHERE status = 'scheduled' AND NOT enqueued`),
		"the chunk rolled back: every key is still to enqueue")
	var dead int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM populate_worker.river_job WHERE kind = 'populate_feed' AND state = 'running'`).Scan(&dead),
		"the dead client's feed job, running")

	const reclaim = 200 * time.Millisecond
	start := time.Now()
	servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		cfg := b.config()
		cfg.MakeWorkers, cfg.FeedOff, cfg.ReclaimEvery = 1, false, reclaim
		return runTest(ctx, cfg, ln, stdout)
	})
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM populate_worker.held_dst`) == keys
	}, reclaim+10*time.Second, 50*time.Millisecond, "every key is fed and made")
	t.Logf("all %d keys made %.1f s after the new replica started (RECLAIM_EVERY %s)", keys, time.Since(start).Seconds(), reclaim)
	require.Zero(t, count(`SELECT count(*) FROM populate_worker.jobs`))
	var state string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT state FROM populate_worker.river_job WHERE id = $1`, dead).Scan(&state))
	require.Equal(t, "running", state, "River itself has not rescued the dead client's feed job")
}

// syncBuffer is a bytes.Buffer a running command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
