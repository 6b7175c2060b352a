package queuetest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue/queuetest"
)

type testArgs struct{}

func (testArgs) Kind() string { return "queuetest" }

// TestDeadProcessAndPatch fetches a job as a dead process would and then ends it, in a
// transaction on River's tables in a schema of its own, dropped at the end.
func TestDeadProcessAndPatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	schema := fmt.Sprintf("queuetest_%d", time.Now().UnixNano())
	_, err = pool.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{Schema: schema, SkipUnknownJobCheck: true})
	require.NoError(t, err)
	ins, err := client.InsertTx(ctx, tx, testArgs{}, nil)
	require.NoError(t, err)

	jobs := queuetest.FetchAsDeadProcess(ctx, t, tx, schema, river.QueueDefault, "dead-client", 10)
	require.Len(t, jobs, 1)
	require.Equal(t, ins.Job.ID, jobs[0].ID)
	require.Equal(t, rivertype.JobStateRunning, jobs[0].State)
	require.Equal(t, []string{"dead-client"}, jobs[0].AttemptedBy)

	hourAgo := time.Now().Add(-time.Hour).Truncate(time.Microsecond) // Postgres keeps microseconds
	job := queuetest.SetJob(ctx, t, tx, schema, ins.Job.ID, queuetest.Patch{AttemptedAt: &hourAgo, MaxAttempts: queuetest.Ptr(1)})
	require.True(t, hourAgo.Equal(*job.AttemptedAt), "attempted_at %v, want %v", *job.AttemptedAt, hourAgo)
	require.Equal(t, 1, job.MaxAttempts)

	require.Equal(t, 1, queuetest.SetJobs(ctx, t, tx, schema, "queuetest", queuetest.Patch{Attempt: queuetest.Ptr(3)}))
	job = queuetest.Finish(ctx, t, tx, schema, ins.Job.ID, rivertype.JobStateDiscarded)
	require.Equal(t, rivertype.JobStateDiscarded, job.State)
	require.Equal(t, 3, job.Attempt)
	require.NotNil(t, job.FinalizedAt)
}
