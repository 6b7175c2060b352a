package work

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/testdb"
)

// A report that comes through the queue is applied once with its consequences, however often
// River delivers it, and one from a dead attempt changes nothing; each delivery completes.
func TestReportWorkerAppliesAQueuedReportOnce(t *testing.T) {
	t.Parallel()
	pool := testdb.NewPool(t, queue.BuildScheduler.Schema())
	tokens, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	ctx := rivertest.WorkContext(context.Background(), tokens) // JobCompleteTx finds its client there
	w := &ReportWorker{Pool: pool, Graph: &jobgraph.Graph{Tokens: tokens}}
	plan, err := dag.Validate(dag.Submission{Name: "g", Jobs: []dag.JobSpec{
		{Name: "a", Target: "linux", Command: []string{"true"}},
		{Name: "b", Target: "linux", Command: []string{"true"}, DependsOn: []string{"a"}},
	}}, dag.DefaultLimits)
	require.NoError(t, err)
	var g int64
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) { g, err = w.Graph.SubmitTx(ctx, tx, plan, 2); return err }))
	c, ok, err := jobgraph.ClaimNext(ctx, pool, "linux", "w1", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	args := queue.BuildReportArgs{JobID: c.JobID, Attempt: c.Attempt, LeaseToken: c.LeaseToken, Outcome: queue.BuildSucceeded}

	job := deliver(t, pool, tokens, args)
	require.NoError(t, w.Work(ctx, job))
	want := map[jobgraph.JobState]int{jobgraph.Complete: 1, jobgraph.Ready: 1}
	require.Equal(t, want, counts(t, pool, g))
	require.Equal(t, 2, buildTokens(t, pool), "b's token committed with the report")

	require.NoError(t, w.Work(ctx, redeliver(t, pool, tokens, job.ID, args)), "a repeated delivery completes")
	late := args
	late.LeaseToken++
	require.NoError(t, w.Work(ctx, deliver(t, pool, tokens, late)), "a dead attempt's report completes")
	require.Equal(t, want, counts(t, pool, g), "neither changed the group")
	require.Equal(t, 2, buildTokens(t, pool), "neither released another token")
	var open int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'build_report' AND state <> 'completed'`).Scan(&open))
	require.Zero(t, open, "every delivery completed")
}

// deliver queues a report and hands it out as River would: running, attempt 1.
func deliver(t *testing.T, pool *pgxpool.Pool, ins *queue.Client, args queue.BuildReportArgs) *river.Job[queue.BuildReportArgs] {
	t.Helper()
	res, err := ins.Insert(context.Background(), args, nil)
	require.NoError(t, err)
	return redeliver(t, pool, ins, res.Job.ID, args)
}

// redeliver hands out job id (again) as River does after a lost completion.
func redeliver(t *testing.T, pool *pgxpool.Pool, ins *queue.Client, id int64, args queue.BuildReportArgs) *river.Job[queue.BuildReportArgs] {
	t.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = attempt + 1, attempted_at = now(), finalized_at = NULL WHERE id = $1`, id)
	require.NoError(t, err)
	row, err := ins.JobGet(ctx, id)
	require.NoError(t, err)
	return &river.Job[queue.BuildReportArgs]{JobRow: row, Args: args}
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
