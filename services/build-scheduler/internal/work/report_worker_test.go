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
	claim   jobgraph.Claim // the claimed job "a" of the group a → b
}

// setup submits the chain a → b on a fresh database and claims a. Its context carries the River
// client, as a worker's does.
func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	pool := testdb.NewPool(t, queue.BuildScheduler.Schema())
	client, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	ctx := rivertest.WorkContext(context.Background(), client)
	logs := &queuetest.UIActionLog{}
	b := &testBundle{pool: pool, client: client, graph: &jobgraph.Graph{Tokens: client}, logs: logs, logger: logs.Logger()}
	plan, err := dag.Validate(dag.Submission{Name: "g", Jobs: []dag.JobSpec{
		{Name: "a", Target: "linux", Command: []string{"true"}},
		{Name: "b", Target: "linux", Command: []string{"true"}, DependsOn: []string{"a"}},
	}}, dag.DefaultLimits)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) { b.groupID, err = b.graph.SubmitTx(ctx, tx, plan, 2); return err }))
	var ok bool
	b.claim, ok, err = jobgraph.ClaimNext(ctx, pool, "linux", "w1", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	return b, ctx
}

// fetch takes the next available job of the scheduler's queue as River's producer does: running,
// its attempt counted.
func fetch[T river.JobArgs](ctx context.Context, t *testing.T, b *testBundle) *river.Job[T] {
	t.Helper()
	rows := queuetest.FetchAsDeadProcess(ctx, t, b.pool, queue.BuildScheduler.Schema(), queue.QueueBuildScheduler, "test", 1)
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
// the press is logged and recorded. A dead attempt's report changes nothing either.
func TestReportWorker(t *testing.T) {
	t.Parallel()

	t.Run("AppliedOnceRetryChangesNothing", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		b.work(t, func(workers *river.Workers) {
			river.AddWorker(workers, &ReportWorker{Pool: b.pool, Graph: b.graph, Logger: b.logger})
		})
		args := queue.BuildReportArgs{JobID: b.claim.JobID, Attempt: b.claim.Attempt, LeaseToken: b.claim.LeaseToken, Outcome: queue.BuildSucceeded}
		res, err := b.client.Insert(ctx, args, nil)
		require.NoError(t, err)
		row := b.waitFinished(ctx, t, res.Job.ID)
		want := map[jobgraph.JobState]int{jobgraph.Complete: 1, jobgraph.Ready: 1}
		require.Equal(t, want, counts(t, b.pool, b.groupID))
		require.Equal(t, 2, buildTokens(t, b.pool), "b's token committed with the report")
		require.Equal(t, rivertype.JobStateCompleted, row.State)
		require.JSONEq(t, `{"applied": true, "job_state": "complete", "group_state": "dispatching"}`, string(row.Output()))
		require.Empty(t, b.logs.UIActions(t), "a first delivery is no button press")
		eventsBefore := b.events(ctx, t, b.groupID)

		_, err = b.client.JobRetry(ctx, row.ID) // River UI's Retry
		require.NoError(t, err)
		row = b.waitFinished(ctx, t, row.ID)
		require.Equal(t, want, counts(t, b.pool, b.groupID), "the retried report changed nothing")
		require.Equal(t, 2, buildTokens(t, b.pool), "and released no token")
		require.Equal(t, rivertype.JobStateCancelled, row.State, "a retry that did nothing is not completed")
		require.Contains(t, row.Errors[len(row.Errors)-1].Error, "changed nothing")
		require.Contains(t, row.Errors[len(row.Errors)-1].Error, "POST /v1/groups/")

		events := b.events(ctx, t, b.groupID)
		require.Len(t, events, len(eventsBefore)+1)
		require.Equal(t, jobgraph.EventRiverUIAction, events[0].Kind)
		require.Contains(t, events[0].Message, "River UI retry of build_report")
		actions := b.logs.UIActions(t)
		require.Len(t, actions, 1)
		require.Equal(t, "build_report", actions[0].Kind)
		require.Equal(t, "retry", actions[0].Action)
		require.Equal(t, row.ID, actions[0].JobID)
		require.Contains(t, actions[0].Did, "changed nothing")
	})

	t.Run("DeadAttemptChangesNothing", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		b.work(t, func(workers *river.Workers) {
			river.AddWorker(workers, &ReportWorker{Pool: b.pool, Graph: b.graph, Logger: b.logger})
		})
		late := queue.BuildReportArgs{JobID: b.claim.JobID, Attempt: b.claim.Attempt, LeaseToken: b.claim.LeaseToken + 1, Outcome: queue.BuildSucceeded}
		res, err := b.client.Insert(ctx, late, nil)
		require.NoError(t, err)
		require.Equal(t, rivertype.JobStateCancelled, b.waitFinished(ctx, t, res.Job.ID).State)
		require.Equal(t, map[jobgraph.JobState]int{jobgraph.Running: 1, jobgraph.Waiting: 1}, counts(t, b.pool, b.groupID))
		require.Empty(t, b.logs.UIActions(t))
	})

	t.Run("CancelWhileRunningAppliesNothing", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		w := &ReportWorker{Pool: b.pool, Graph: b.graph, Logger: b.logger}
		args := queue.BuildReportArgs{JobID: b.claim.JobID, Attempt: b.claim.Attempt, LeaseToken: b.claim.LeaseToken, Outcome: queue.BuildSucceeded}
		_, err := b.client.Insert(ctx, args, nil)
		require.NoError(t, err)
		job := fetch[queue.BuildReportArgs](ctx, t, b)
		cctx, cancel := context.WithCancelCause(ctx)
		cancel(river.ErrJobCancelledRemotely) // River UI's Cancel, as River's producer delivers it
		require.NoError(t, w.Work(cctx, job))
		require.Equal(t, map[jobgraph.JobState]int{jobgraph.Running: 1, jobgraph.Waiting: 1}, counts(t, b.pool, b.groupID))
		row := b.job(ctx, t, job.ID)
		require.Equal(t, rivertype.JobStateCancelled, row.State)
		require.Contains(t, row.Errors[0].Error, "was not applied")
		events := b.events(ctx, t, b.groupID)
		require.Equal(t, jobgraph.EventRiverUIAction, events[0].Kind)
		require.Contains(t, events[0].Message, "River UI cancel of build_report")
		actions := b.logs.UIActions(t)
		require.Len(t, actions, 1)
		require.Equal(t, "cancel", actions[0].Action)
	})
}

func counts(t *testing.T, pool *pgxpool.Pool, g int64) map[jobgraph.JobState]int {
	t.Helper()
	group, err := jobgraph.GetGroup(context.Background(), pool, g)
	require.NoError(t, err)
	return group.Counts
}

func buildTokens(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'build_run'`).Scan(&n))
	return n
}
