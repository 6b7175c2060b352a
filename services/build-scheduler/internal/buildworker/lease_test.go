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
// reach). Either way the build's whole process group is killed within the lease.
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
			w := &Worker{Pool: schemaPool(t, pool.Config().ConnString()), Logs: logstore.Postgres{DB: pool}, ID: "lease", Lease: lease, Logger: slog.New(slog.DiscardHandler)}
			c, ok, err := jobgraph.ClaimNext(context.Background(), w.Pool, "lease", w.ID, lease)
			require.NoError(t, err)
			require.True(t, ok)
			done := make(chan outcome, 1)
			go func() { done <- w.attempt(context.Background(), c) }()
			var pids []int
			require.Eventually(t, func() bool { pids = readPids(t, pidFile); return len(pids) == 3 }, 10*time.Second, 10*time.Millisecond)
			lost := time.Now()
			tt.lose(t, w, c)
			select {
			case out := <-done:
				require.Equal(t, tt.want, out)
			case <-time.After(5 * time.Second):
				t.Fatal("the build ran on after its lease was lost")
			}
			require.Less(t, time.Since(lost), lease+lease/3, "killed later than a lease after the loss")
			for _, pid := range pids {
				require.False(t, alive(pid), "pid %d of the build survived its lost lease", pid)
			}
		})
	}
}
