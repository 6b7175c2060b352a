package buildworker

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// The watchdog and the liveness sweep get a graph whose River jobs wake the producers at once:
// they make jobs ready outside a build's report, where nothing announces them afterwards. The
// worker polls every 30 s here, so each of three jobs made ready one after the other through that
// graph is built within seconds only if its River job's insert was notified (the worker's own
// quiet inserter notifies a queue's first insert only).
func TestMaintenanceBuildsWakeTheWorker(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	graphs := make(chan *jobgraph.Graph, 1)
	kinds := func(workers *river.Workers, _ *pgxpool.Pool, graph *jobgraph.Graph, build river.Worker[queue.BuildRunArgs]) []*river.PeriodicJob {
		river.AddWorker(workers, build)
		graphs <- graph
		return nil
	}
	var cfg Config
	require.NoError(t, config.Defaults(&cfg))
	cfg.Common, cfg.HTTPAddr, cfg.Targets, cfg.Slots = servicetest.Config(dbURL), "127.0.0.1:0", []string{"maint"}, 1
	cfg.FetchPollInterval = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- Run(ctx, cfg, kinds, nil, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-stopped)
	})
	var graph *jobgraph.Graph
	select {
	case graph = <-graphs:
	case err := <-stopped:
		t.Fatalf("the worker stopped before it started: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never registered its kinds")
	}

	pool := schemaPool(t, dbURL)
	for i := range 3 {
		plan, err := dag.Validate(dag.Submission{Name: fmt.Sprintf("maint%d", i),
			Jobs: []dag.JobSpec{{Name: "build", Target: "maint", Command: []string{"true"}}}}, dag.DefaultLimits)
		require.NoError(t, err)
		var groupID int64
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			groupID, err = graph.SubmitTx(ctx, tx, plan, 1)
			return err
		}))
		// Well under the 30 s poll, well over a loaded machine's fetch and build of `true`.
		require.Eventually(t, func() bool {
			g, err := jobgraph.GetGroup(ctx, pool, groupID)
			require.NoError(t, err)
			return g.State == jobgraph.GroupComplete
		}, 10*time.Second, 10*time.Millisecond, "job %d of 3 waited for the worker's poll", i+1)
	}
}
