package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue/queuetest"
)

// A kind's Takeover runs in the sweep's transaction for the dead process's jobs of that kind
// only, sees their args, and its notes end the errors River records; a Takeover that fails rolls
// the whole sweep back.
func TestSweepRunsTakeoversInItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	b.addProcess(t, "dead-1", time.Minute)
	held := b.insert(t, &river.InsertOpts{MaxAttempts: 1})
	other := b.insert(t, &river.InsertOpts{Queue: "other"})
	require.Len(t, queuetest.FetchAsDeadProcess(ctx, t, b.pool, b.schema, river.QueueDefault, "dead-1", 1), 1)
	require.Len(t, queuetest.FetchAsDeadProcess(ctx, t, b.pool, b.schema, "other", "dead-1", 1), 1)

	boom := errors.New("boom")
	failing := map[string]Takeover{"liveness_hold": func(context.Context, pgx.Tx, []RescuedJob) (map[int64]string, error) { return nil, boom }}
	_, err := Sweep(ctx, b.pool, b.schema, SweepOptions{Takeovers: failing})
	require.ErrorIs(t, err, boom)
	require.Equal(t, rivertype.JobStateRunning, b.job(t, held).State, "a failed takeover rolls the sweep back")
	require.Equal(t, []string{"dead-1"}, b.processIDs(t))

	var seen []RescuedJob
	takeovers := map[string]Takeover{"liveness_hold": func(ctx context.Context, tx pgx.Tx, jobs []RescuedJob) (map[int64]string, error) {
		seen = jobs
		// Written in the sweep's transaction: it commits with the jobs' rescue.
		if _, err := tx.Exec(ctx, `CREATE TABLE `+b.schema+`.taken_over (id bigint)`); err != nil {
			return nil, err
		}
		notes := map[int64]string{}
		for _, j := range jobs {
			notes[j.ID] = "its work goes on elsewhere"
		}
		return notes, nil
	}}
	res, err := Sweep(ctx, b.pool, b.schema, SweepOptions{Takeovers: takeovers})
	require.NoError(t, err)
	require.Equal(t, 2, res.Jobs())
	require.Len(t, seen, 2, "every job of the kind, whatever its queue")
	for _, j := range seen {
		require.Equal(t, "dead-1", j.Process)
		require.Equal(t, 1, j.Attempt)
		require.JSONEq(t, `{"release": "/nonexistent"}`, string(j.Args))
	}
	for _, id := range []int64{held, other} {
		job := b.job(t, id)
		require.Contains(t, job.Errors[0].Error, "rescued from process dead-1")
		require.Contains(t, job.Errors[0].Error, "; its work goes on elsewhere")
	}
	require.Equal(t, rivertype.JobStateDiscarded, b.job(t, held).State)
	var exists bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, b.schema+".taken_over").Scan(&exists))
	require.True(t, exists, "the takeover's write committed with the sweep")
}

// A build_run River job placed in order is inserted available, with the order's scheduled_at, so
// River's fetch takes it at once and in the scheduler's order; one not placed keeps River's own
// insert.
func TestBuildRunInOrderIsAvailableAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: b.schema, SkipUnknownJobCheck: true})
	require.NoError(t, err)
	args := BuildRunArgs{Target: "linux", GroupID: 7, JobID: 42, JobName: "a", Attempt: 1, Command: []string{"true"}}
	res, err := client.InsertMany(ctx, []river.InsertManyParams{{Args: args.InOrder(3)}, {Args: args}})
	require.NoError(t, err)
	placed, plain := b.job(t, res[0].Job.ID), b.job(t, res[1].Job.ID)
	require.Equal(t, rivertype.JobStateAvailable, placed.State)
	require.True(t, placed.ScheduledAt.Equal(BuildOrder(7, 3)), "scheduled at %s", placed.ScheduledAt)
	require.Equal(t, rivertype.JobStateAvailable, plain.State)
	require.Greater(t, plain.ScheduledAt.Year(), 2000, "River's own insert: scheduled when inserted, not in the order's 1970s")
}
