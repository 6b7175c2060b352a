package buildworker

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/testdb"
)

// TestLostLeaseKillsTheBuild claims a job whose command starts grandchildren and takes the lease
// away while it runs, in the two ways a worker loses it: another attempt holds the job now (the
// heartbeat hears so), or no heartbeat gets through for a whole lease (the database is out of
// reach). Either way the build's whole process group is killed.
func TestLostLeaseKillsTheBuild(t *testing.T) {
	t.Parallel()
	const lease = 900 * time.Millisecond
	tests := map[string]struct {
		lose func(t *testing.T, w *Worker, c jobgraph.Claim)
		want outcome
	}{
		"Taken": {
			lose: func(t *testing.T, w *Worker, c jobgraph.Claim) {
				_, err := w.Pool.Exec(context.Background(), `UPDATE job_graph SET lease_token = lease_token + 1 WHERE id = $1`, c.JobID)
				require.NoError(t, err)
			},
			want: outcome{result: queue.BuildFailed, exitCode: -1, err: "lease lost"},
		},
		"Unrenewed": {
			lose: func(t *testing.T, w *Worker, _ jobgraph.Claim) { w.Pool.Close() },
			want: outcome{unreported: true},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := testdb.NewPool(t, queue.BuildScheduler.Schema())
			pidFile := filepath.Join(t.TempDir(), "pids")
			submit(t, pool, dag.JobSpec{Name: "spawner", Target: "lease", Command: []string{"sh", "-c", spawner, "sh", pidFile}})
			w := &Worker{Pool: schemaPool(t, pool.Config().ConnString()), Logs: logstore.Postgres{DB: pool}, ID: "lease", Lease: lease, MaxJobTimeout: time.Hour, TokenSlack: time.Minute, Logger: slog.New(slog.DiscardHandler)}
			t.Cleanup(w.Close)
			c, ok, err := jobgraph.ClaimNext(context.Background(), w.Pool, "lease", w.ID, lease)
			require.NoError(t, err)
			require.True(t, ok)
			done := make(chan outcome, 1)
			go func() { done <- w.attempt(context.Background(), c, nil) }()
			var pids []int
			require.Eventually(t, func() bool { pids = readPids(t, pidFile); return len(pids) == 3 }, 10*time.Second, 10*time.Millisecond)
			tt.lose(t, w, c)
			// The outcome names the loss: "lease lost" comes only from a heartbeat told so, and
			// an unreported outcome only from the local expiry. A build the loss did not stop
			// would end with its sleeps, after 30 s, as a failure or a success; the minute is a
			// hang guard, not a measure.
			select {
			case out := <-done:
				require.Equal(t, tt.want, out)
			case <-time.After(time.Minute):
				t.Fatal("the build ran on after its lease was lost")
			}
			// The whole group was sent SIGKILL before the outcome came back, but a killed process
			// is gone only when the kernel next runs it, which on a loaded machine can be after the
			// outcome is back. One the signal missed runs on (sleep 30).
			for _, pid := range pids {
				require.Eventually(t, func() bool { return !alive(pid) }, 3*time.Second, 5*time.Millisecond,
					"pid %d of the build survived its lost lease", pid)
			}
		})
	}
}

// TestUnrenewedLeaseRunsFromTheClaim starts an attempt on a claim sent an hour's lease ago but
// a second, with the database already out of reach, so no heartbeat ever gets through: the build
// is killed when the lease counted from the claim runs out, when the reaper may hand the job out
// again, not an hour after the attempt began (then the command would end by itself, after 30 s,
// and report).
func TestUnrenewedLeaseRunsFromTheClaim(t *testing.T) {
	t.Parallel()
	const lease = time.Hour
	pool := testdb.NewPool(t, queue.BuildScheduler.Schema())
	submit(t, pool, dag.JobSpec{Name: "sleeper", Target: "claimed", Command: []string{"sleep", "30"}})
	w := &Worker{Pool: schemaPool(t, pool.Config().ConnString()), Logs: logstore.Postgres{DB: pool}, ID: "claimed", Lease: lease, MaxJobTimeout: time.Hour, TokenSlack: time.Minute, Logger: slog.New(slog.DiscardHandler)}
	t.Cleanup(w.Close)
	c, ok, err := jobgraph.ClaimNext(context.Background(), w.Pool, "claimed", w.ID, lease)
	require.NoError(t, err)
	require.True(t, ok)
	w.Pool.Close()
	c.Sent = c.Sent.Add(-lease + time.Second)
	require.Equal(t, outcome{unreported: true}, w.attempt(context.Background(), c, nil))
	require.False(t, time.Now().Before(c.Sent.Add(lease)), "killed before the lease from the claim ran out")
}
