package buildworker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	if dbURL := os.Getenv(killedWorkerEnv); dbURL != "" {
		os.Exit(runKilledWorker(dbURL))
	}
	goleak.VerifyTestMain(m)
}

// lanes and rounds make the 50 rounds of TestOldestGroupFirst: each lane is a target of its own
// with one slot, so the lanes' rounds run side by side without touching each other's order.
const lanes, rounds = 5, 10

// TestOldestGroupFirst is Habitat Builder's mark_job_complete scenario through River's own fetch,
// 50 times: with one slot, an older group whose jobs release dependents as they finish
// and a newer group whose jobs are all ready from the start, every job of the older group runs
// before any job of the newer one. It fails when a finished job's dependents become ready only
// after its slot fetched again (a report applied through the queue), or when River's fetch order
// is not the scheduler's.
func TestOldestGroupFirst(t *testing.T) {
	t.Parallel()
	pool := testdb.NewPool(t, queue.BuildScheduler.Schema())
	// As the build-worker reports: a quiet inserter inserts the released jobs' River jobs on the
	// report's transaction, and the worker announces them once it has committed (no Announcer:
	// in the slot).
	builds, err := queue.NewQuietInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	graph := &jobgraph.Graph{Builds: builds}
	startWorker(t, pool, graph)

	for lane := range lanes {
		t.Run(fmt.Sprintf("Lane%d", lane), func(t *testing.T) {
			t.Parallel()
			for round := range rounds {
				older, newer := submitPair(t, pool, graph, laneTarget(lane))
				requireOlderFirst(t, pool, older, newer, round)
			}
		})
	}
}

func laneTarget(lane int) string { return fmt.Sprintf("oldest%d", lane) }

// startWorker runs a River client working every lane's queue with one slot, until the test ends.
func startWorker(t *testing.T, pool *pgxpool.Pool, graph *jobgraph.Graph) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	workers := river.NewWorkers()
	build := &Worker{Pool: pool, Graph: graph, Logs: logstore.Postgres{DB: pool}, ID: "oldest-first", MaxJobTimeout: time.Hour, Slack: time.Minute, Logger: quiet}
	t.Cleanup(build.Close)
	river.AddWorker(workers, build)
	queues := map[string]river.QueueConfig{}
	for lane := range lanes {
		queues[queue.BuildQueue(laneTarget(lane))] = river.QueueConfig{MaxWorkers: 1}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: queue.BuildScheduler.Schema(), Queues: queues, Workers: workers, Logger: quiet,
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond, TestOnly: true,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		cancel()
		<-client.Stopped()
	})
}

// submitPair submits, in one transaction, an older group (a diamond: root, then left and right,
// then join, then a chain of two) and a newer group of three independent jobs, all on target.
func submitPair(t *testing.T, pool *pgxpool.Pool, graph *jobgraph.Graph, target string) (older, newer int64) {
	t.Helper()
	job := func(name string, deps ...string) dag.JobSpec {
		return dag.JobSpec{Name: name, Target: target, Command: []string{"true"}, DependsOn: deps}
	}
	plans := make([]dag.Plan, 2)
	var err error
	plans[0], err = dag.Validate(dag.Submission{Name: "older", Jobs: []dag.JobSpec{
		job("root"), job("left", "root"), job("right", "root"), job("join", "left", "right"), job("tail", "join"), job("end", "tail"),
	}}, dag.DefaultLimits)
	require.NoError(t, err)
	plans[1], err = dag.Validate(dag.Submission{Name: "newer", Jobs: []dag.JobSpec{job("n1"), job("n2"), job("n3")}}, dag.DefaultLimits)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if older, err = graph.SubmitTx(ctx, tx, plans[0], 1); err != nil {
			return err
		}
		newer, err = graph.SubmitTx(ctx, tx, plans[1], 1)
		return err
	}))
	return older, newer
}

// requireOlderFirst waits for both groups to complete and requires that the newer group's first
// job started after the older group's last.
func requireOlderFirst(t *testing.T, pool *pgxpool.Pool, older, newer int64, round int) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var open int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM groups WHERE id IN ($1, $2) AND state <> 'complete'`,
			older, newer).Scan(&open))
		return open == 0
	}, 30*time.Second, 10*time.Millisecond, "round %d: groups %d and %d did not complete", round, older, newer)
	var order []string
	rows, err := pool.Query(ctx, `SELECT CASE WHEN group_id = $1 THEN 'older:' ELSE 'newer:' END || name
		FROM job_graph WHERE group_id IN ($1, $2) ORDER BY started_at, id`, older, newer)
	require.NoError(t, err)
	order, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"older:root", "older:left", "older:right", "older:join", "older:tail", "older:end", "newer:n1", "newer:n2", "newer:n3"},
		order, "round %d: start order", round)
}
