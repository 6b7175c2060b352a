package work

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/testdb"
)

type testBundle struct {
	pool    *pgxpool.Pool
	client  *queue.Client
	graph   *jobgraph.Graph
	logs    *queuetest.UIActionLog
	logger  *slog.Logger
	groupID int64
}

// setup submits the chain a → b on a fresh database. Its context carries the River client, as a
// worker's does.
func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	pool := testdb.NewPool(t, queue.BuildScheduler.Schema())
	client, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	ctx := rivertest.WorkContext(context.Background(), client)
	logs := &queuetest.UIActionLog{}
	b := &testBundle{pool: pool, client: client, graph: &jobgraph.Graph{Builds: client}, logs: logs, logger: logs.Logger()}
	plan, err := dag.Validate(dag.Submission{Name: "g", Jobs: []dag.JobSpec{
		{Name: "a", Target: "linux", Command: []string{"true"}},
		{Name: "b", Target: "linux", Command: []string{"true"}, DependsOn: []string{"a"}},
	}}, dag.DefaultLimits)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) { b.groupID, err = b.graph.SubmitTx(ctx, tx, plan, 2); return err }))
	return b, ctx
}

// fetch takes the next available job of the scheduler's queue as River's producer does: running,
// its attempt counted.
func fetch[T river.JobArgs](ctx context.Context, t *testing.T, b *testBundle) *river.Job[T] {
	t.Helper()
	return fetchFrom[T](ctx, t, b, queue.QueueBuildScheduler)
}

// fetchFrom is fetch from queue name.
func fetchFrom[T river.JobArgs](ctx context.Context, t *testing.T, b *testBundle, name string) *river.Job[T] {
	t.Helper()
	rows := queuetest.FetchAsDeadProcess(ctx, t, b.pool, queue.BuildScheduler.Schema(), name, "test", 1)
	require.Len(t, rows, 1)
	job := &river.Job[T]{JobRow: rows[0]}
	require.NoError(t, json.Unmarshal(rows[0].EncodedArgs, &job.Args))
	return job
}

// work starts a River client working the scheduler's queue with the given workers until the
// test ends, as the scheduler does.
func (b *testBundle) work(t *testing.T, add func(*river.Workers)) {
	t.Helper()
	workers := river.NewWorkers()
	add(workers)
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{
		Schema: queue.BuildScheduler.Schema(), Queues: map[string]river.QueueConfig{queue.QueueBuildScheduler: {MaxWorkers: 1}},
		Workers: workers, Logger: slog.New(slog.DiscardHandler), FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond, TestOnly: true,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		cancel()
		<-client.Stopped()
	})
}

// waitFinished waits for job id to finish and returns it.
func (b *testBundle) waitFinished(ctx context.Context, t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	var row *rivertype.JobRow
	require.Eventually(t, func() bool {
		row = b.job(ctx, t, id)
		return row.FinalizedAt != nil
	}, 20*time.Second, 10*time.Millisecond, "job %d never finished", id)
	return row
}

func (b *testBundle) job(ctx context.Context, t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	row, err := b.client.JobGet(ctx, id)
	require.NoError(t, err)
	return row
}

func (b *testBundle) events(ctx context.Context, t *testing.T, groupID int64) []jobgraph.Event {
	t.Helper()
	events, err := jobgraph.Events(ctx, b.pool, groupID, 100)
	require.NoError(t, err)
	return events
}

// A report that comes through the queue is applied once with its consequences. Retry in River UI
// delivers it again, and then it changes nothing and ends cancelled, saying what to do instead;
