package main

import (
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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/services/populate-worker/internal/work"
	"drover.dev/shared/procattr"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// scheduleGate is the advisory lock the gated table's key_source waits for.
const scheduleGate = 4242

// TestKilledReplicaLeavesNoJobRunning SIGKILLs a replica while it holds two River jobs: a make
// (its HTTP function hangs) and the periodic schedule (a table's key_source waits for a lock the
// test holds), with every timeout at its default. Another replica then makes every key, and River
// shows no job of the dead replica running, within LIVENESS_TIMEOUT plus 30 s: the dead make's
// key is reclaimed at once (its connection is gone); the dead schedule job holds back no
// identical schedule (its uniqueness has a period); and the liveness sweep gives both jobs back
// once the dead replica's record is older than LIVENESS_TIMEOUT, where River's rescuer would wait
// for a make's hour. Run again, the make finds its key made and the schedule schedules nothing.
func TestKilledReplicaLeavesNoJobRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupKill(t)
	gate, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer gate.Release()
	_, err = gate.Exec(ctx, `SELECT pg_advisory_lock($1)`, scheduleGate)
	require.NoError(t, err)

	const helper = "populate-helper-killed"
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperWorkerProcess$")
	cmd.Env = append(os.Environ(), "POPULATE_HELPER_DB="+b.dbURL, "POPULATE_HELPER_TABLES="+b.tablesFile,
		"POPULATE_HELPER_WORKER_ID="+helper)
	procattr.DieWithParent(cmd)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	select {
	case <-b.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the helper never started a_held's make")
	}
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND wait_event = 'advisory'`) == 1
	}, 20*time.Second, 10*time.Millisecond, "the helper's schedule waits in b_gated's key_source")
	running := b.helperRunning(t, helper)
	require.Subset(t, running, []string{"populate_make", "populate_schedule"}, "the helper holds a make and the schedule (and its feeder may be in a pass)")
	t.Logf("killing the helper holding %v", running)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	killed := time.Now()
	// The server notices the dead client of a backend waiting on a lock only once it is granted:
	// end it as the server would, then open the gate.
	_, err = b.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()
		AND wait_event_type = 'Lock' AND wait_event = 'advisory'`)
	require.NoError(t, err)
	_, err = gate.Exec(ctx, `SELECT pg_advisory_unlock($1)`, scheduleGate)
	require.NoError(t, err)

	servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, b.config(), ln, stdout)
	})
	// Every timeout is at its default (a make's is an hour): the liveness sweep, not River's
	// rescuer, gives the dead replica's jobs back.
	bound := queue.LivenessTimeoutDefault + 30*time.Second
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM populate_worker.a_held_dst`) == 1 &&
			b.count(t, `SELECT count(*) FROM populate_worker.b_gated_dst`) == 3 &&
			len(b.helperRunning(t, helper)) == 0
	}, bound-time.Since(killed), 100*time.Millisecond, "every key made and no job of the dead replica running")
	t.Logf("every key made and no job of the dead replica running %.1f s after the kill (bound %s)", time.Since(killed).Seconds(), bound)
	require.Zero(t, b.count(t, `SELECT count(*) FROM populate_worker.jobs`), "no key left behind")
	require.Equal(t, int32(1), b.calls.Load(), "a_held's key made once after the hung call")
}

// killBundle is a database with two computed tables made by one HTTP function whose first call
// hangs until its caller goes away: a_held (one key) and b_gated (three keys, whose key_source
// waits for the advisory lock scheduleGate). The periodic schedule runs them in name order.
type killBundle struct {
	dbURL      string
	tablesFile string
	pool       *pgxpool.Pool
	entered    chan struct{}
	calls      atomic.Int32
}

func setupKill(t *testing.T) *killBundle {
	t.Helper()
	b := &killBundle{dbURL: testdb.New(t), entered: make(chan struct{})}
	b.pool = testdb.NewPoolFor(t, b.dbURL)
	var served atomic.Int32
	testOver := make(chan struct{})
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 1 {
			close(b.entered)
			select {
			case <-r.Context().Done():
			case <-testOver:
			}
			return
		}
		var req struct{ Table string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Table == "a_held" {
			b.calls.Add(1)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"rows": []map[string]int{{"v": 7}}})
	}))
	t.Cleanup(fn.Close)
	t.Cleanup(func() { close(testOver) })
	_, err := b.pool.Exec(context.Background(), fmt.Sprintf(`
		CREATE TABLE populate_worker.a_held_src (k int PRIMARY KEY);
		CREATE TABLE populate_worker.a_held_dst (k int PRIMARY KEY, v int NOT NULL);
		CREATE TABLE populate_worker.b_gated_src (k int PRIMARY KEY);
		CREATE TABLE populate_worker.b_gated_dst (k int PRIMARY KEY, v int NOT NULL);
		CREATE FUNCTION populate_worker.schedule_gate() RETURNS boolean LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_advisory_lock_shared(%[1]d); PERFORM pg_advisory_unlock_shared(%[1]d); RETURN true; END $$;
		INSERT INTO populate_worker.a_held_src VALUES (1);
		INSERT INTO populate_worker.b_gated_src VALUES (1), (2), (3)`, scheduleGate))
	require.NoError(t, err)
	b.tablesFile = filepath.Join(t.TempDir(), "tables.json")
	tables := fmt.Sprintf(`[
		{"name": "a_held", "target": "a_held_dst", "primary_key": ["k"], "key_source": "SELECT k FROM a_held_src",
		 "upstream": ["a_held_src"], "function_url": %[1]q},
		{"name": "b_gated", "target": "b_gated_dst", "primary_key": ["k"],
		 "key_source": "SELECT k FROM b_gated_src WHERE populate_worker.schedule_gate()", "upstream": ["b_gated_src"], "function_url": %[1]q}]`, fn.URL)
	require.NoError(t, os.WriteFile(b.tablesFile, []byte(tables), 0o600))
	return b
}

// config is the surviving replica: default timeouts, a schedule every second.
func (b *killBundle) config() Config {
	return Config{Common: servicetest.Config(b.dbURL), TablesFile: b.tablesFile,
		Settings: wiring.Settings{MakeWorkers: 1, MinSchedulingInterval: time.Millisecond, ReclaimEvery: 200 * time.Millisecond, ScheduleEvery: time.Second}}
}

func (b *killBundle) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

// helperRunning lists the kinds of the jobs River shows running under client, in kind order.
func (b *killBundle) helperRunning(t *testing.T, client string) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT kind FROM populate_worker.river_job
		WHERE state = 'running' AND attempted_by[array_upper(attempted_by, 1)] = $1 ORDER BY kind`, client)
	require.NoError(t, err)
	var kinds []string
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		kinds = append(kinds, k)
	}
	require.NoError(t, rows.Err())
	return kinds
}

// TestEveryKindIsRescuedWithinItsTimeout checks, for the production defaults and for short
// settings, that River's RescueStuckJobsAfter is no longer than any kind's timeout, so that its
// rescuer takes back a dead replica's job of every kind within that kind's timeout plus 30 s.
func TestEveryKindIsRescuedWithinItsTimeout(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {
		Settings: wiring.Settings{MakeTimeout: time.Second, MaintenanceTimeout: 2 * time.Second, FeedTimeout: 3 * time.Second}}} {
		cfg = cfg.withDefaults()
		timeouts := map[string]time.Duration{
			queue.PopulateMakeArgs{}.Kind():     (&work.MakeWorker{MakeTimeout: cfg.MakeTimeout}).Timeout(nil),
			queue.PopulateScheduleArgs{}.Kind(): (&work.ScheduleWorker{MaintenanceTimeout: cfg.MaintenanceTimeout}).Timeout(nil),
			queue.PopulateCleanupArgs{}.Kind():  (&work.CleanupWorker{MaintenanceTimeout: cfg.MaintenanceTimeout}).Timeout(nil),
			"populate_feed":                     (&work.FeedWorker{FeedTimeout: cfg.FeedTimeout}).Timeout(nil),
			"(client JobTimeout)":               cfg.RescueAfter(),
		}
		for kind, d := range timeouts {
			require.Positive(t, d, kind)
			require.LessOrEqual(t, cfg.RescueAfter(), d, "%s: River looks at a job only after RescueStuckJobsAfter", kind)
		}
	}
}
