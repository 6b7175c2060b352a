package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/testdb"
)

func TestBatchLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct{ tx pgx.Tx }
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		// A database per test: batches_one_running would make parallel transactions on a shared
		// database wait for each other.
		tx, err := testdb.NewPool(t, "batch_runner").Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		return &testBundle{tx: tx}
	}
	result := func() *batch.Result {
		now := time.Now()
		return &batch.Result{
			Stages:    []batch.Stage{{Name: "manifests", StartedAt: now, FinishedAt: now}},
			Manifests: []batch.ManifestEntry{{Miner: "m1", Class: "always_on.test", Declared: 1, Tested: 1}},
			Jobs: []batch.JobResult{{UUID: "7b9e4c1e-3f0a-4a8e-9d2b-1c2d3e4f5a6b", Miner: "m1", Class: "always_on.test",
				Generator: "pow_v1", Outcome: batch.OutcomeCompleted, Reason: batch.ReasonSuccess, Score: 1,
				BeforeSend: now, AfterSend: now, EndAt: now.Add(time.Millisecond), TimeTook: time.Millisecond, TimeLimit: time.Second}},
			Events: []sysevent.Event{{Type: sysevent.TypeTelemetry, Subtype: sysevent.SyntheticBatch, At: now, Data: []byte(`{}`)}},
		}
	}

	t.Run("RetriedJobTakesOverItsBatchAndFinishesOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		first, err := BatchStart(ctx, bundle.tx, 101, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		// The process died in phase 2: nothing but the row exists. River retries the job.
		again, err := BatchStart(ctx, bundle.tx, 101, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		require.Equal(t, first.ID, again.ID)
		require.Equal(t, 2, again.Attempt)
		require.ErrorIs(t, BatchFinish(ctx, bundle.tx, first, result()), ErrConflict, "a stale attempt cannot finish")
		require.NoError(t, BatchFinish(ctx, bundle.tx, again, result()))
		require.False(t, again.Retried, "River's own retry")
		ended, err := BatchStart(ctx, bundle.tx, 101, "api", time.Hour, time.Minute)
		require.ErrorIs(t, err, ErrAlreadyDone, "a job delivered after its batch committed runs nothing")
		require.ErrorContains(t, err, fmt.Sprintf("batch %d of job 101 is done", again.ID))
		require.Equal(t, Started{ID: again.ID, Attempt: 2, JobID: 101}, ended, "the batch it ran")
		b, err := BatchGet(ctx, bundle.tx, again.ID)
		require.NoError(t, err)
		require.Equal(t, BatchDone, b.State)
		require.Equal(t, map[batch.Outcome]int{batch.OutcomeCompleted: 1}, b.Counts)
		jobs, err := JobList(ctx, bundle.tx, again.ID)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
	})

	t.Run("OneBatchRunsAtATime", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		_, err := BatchStart(ctx, bundle.tx, 201, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		_, err = BatchStart(ctx, bundle.tx, 202, "periodic", time.Hour, time.Minute)
		require.ErrorIs(t, err, ErrConflict)
	})

	t.Run("FailedAttemptKeepsItsEvents", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		s, err := BatchStart(ctx, bundle.tx, 301, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		require.NoError(t, BatchFail(ctx, bundle.tx, s, context.Canceled, result()))
		events, err := EventList(ctx, bundle.tx, s.ID)
		require.NoError(t, err)
		require.Len(t, events, 1)
		jobs, err := JobList(ctx, bundle.tx, s.ID)
		require.NoError(t, err)
		require.Empty(t, jobs, "a failed batch writes no half results")
	})
	t.Run("RetryOfABatchEndedForGoodIsTold", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		s, err := BatchStart(ctx, bundle.tx, 401, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		// An attempt that failed and left the job to River's retry: not an ended job.
		require.NoError(t, BatchFail(ctx, bundle.tx, s, errors.New("miners unreachable"), result()))
		s, err = BatchStart(ctx, bundle.tx, 401, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		require.False(t, s.Retried)
		// The last attempt fails and ends the job: only River UI's Retry brings it back.
		require.NoError(t, BatchFail(ctx, bundle.tx, s, errors.New("miners unreachable"), nil))
		require.NoError(t, EventsWrite(ctx, bundle.tx, s, []sysevent.Event{
			sysevent.One(sysevent.TypeRiverJob, sysevent.JobDiscarded, "ended", nil)}))
		s, err = BatchStart(ctx, bundle.tx, 401, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		require.Equal(t, 3, s.Attempt)
		require.True(t, s.Retried)
		// A retry refused or run again is no end of the job.
		require.NoError(t, EventsWrite(ctx, bundle.tx, s, []sysevent.Event{
			sysevent.One(sysevent.TypeRiverJob, sysevent.JobRetried, "again", nil)}))
		require.NoError(t, BatchFail(ctx, bundle.tx, s, errors.New("miners unreachable"), nil))
		s, err = BatchStart(ctx, bundle.tx, 401, "api", time.Hour, time.Minute)
		require.NoError(t, err)
		require.False(t, s.Retried)
	})

	t.Run("ShardedBatchIsNotStartedAgain", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		b := shardedBatch(t, bundle.tx, 501)
		again, err := BatchStart(ctx, bundle.tx, 501, "api", time.Hour, time.Minute)
		require.ErrorIs(t, err, ErrAlreadyDone)
		require.ErrorContains(t, err, fmt.Sprintf("batch %d of job 501 was handed to its 2 shards and is running", b.ID))
		require.Equal(t, b.ID, again.ID)
	})
}
