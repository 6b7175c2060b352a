package work

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// Retry in River UI on a finished watchdog pass runs another pass at once, which the job graph's
// system-wide events and the log record; Cancel on a running pass rolls it back.
func TestWatchdogWorker(t *testing.T) {
	t.Parallel()

	t.Run("RetryRunsAPass", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		b.work(t, func(workers *river.Workers) {
			river.AddWorker(workers, &WatchdogWorker{Pool: b.pool, Graph: b.graph, StallAfter: time.Hour, Logger: b.logger})
		})
		res, err := b.client.Insert(ctx, WatchdogArgs{}, nil)
		require.NoError(t, err)
		row := b.waitFinished(ctx, t, res.Job.ID)
		require.Equal(t, rivertype.JobStateCompleted, row.State)
		require.JSONEq(t, `{"watched_groups": 1, "cancelled_groups": null, "settled_groups": null, "drifted_groups": 0}`, string(row.Output()))
		require.Empty(t, b.events(ctx, t, 0), "a periodic pass that finds nothing records nothing")
		require.Empty(t, b.logs.UIActions(t))

		_, err = b.client.JobRetry(ctx, row.ID) // River UI's Retry
		require.NoError(t, err)
		b.logs.WaitUIActions(t, 1)
		row = b.waitFinished(ctx, t, row.ID)
		require.Equal(t, rivertype.JobStateCompleted, row.State, "the retry ran a pass")
		require.Equal(t, 2, row.Attempt)
		events := b.events(ctx, t, 0)
		require.Len(t, events, 1)
		require.Equal(t, jobgraph.EventRiverUIAction, events[0].Kind)
		require.Nil(t, events[0].GroupID, "a system-wide event")
		require.Contains(t, events[0].Message, "River UI retry of build_watchdog")
		require.Contains(t, events[0].Message, "a watchdog pass over 1 open groups")
		actions := b.logs.UIActions(t)
		require.Len(t, actions, 1)
		require.Equal(t, "build_watchdog", actions[0].Kind)
		require.Equal(t, "retry", actions[0].Action)
	})

	t.Run("CancelWhileRunningRollsThePassBack", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		w := &WatchdogWorker{Pool: b.pool, Graph: b.graph, StallAfter: time.Hour, Logger: b.logger}
		_, err := b.client.Insert(ctx, WatchdogArgs{}, nil)
		require.NoError(t, err)
		job := fetch[WatchdogArgs](ctx, t, b)
		cctx, cancel := context.WithCancelCause(ctx)
		cancel(river.ErrJobCancelledRemotely) // River UI's Cancel, as River's producer delivers it
		require.NoError(t, w.Work(cctx, job))
		row := b.job(ctx, t, job.ID)
		require.Equal(t, rivertype.JobStateCancelled, row.State)
		require.Contains(t, row.Errors[0].Error, "rolled back")
		events := b.events(ctx, t, 0)
		require.Len(t, events, 1)
		require.Contains(t, events[0].Message, "River UI cancel of build_watchdog")
		require.Len(t, b.logs.UIActions(t), 1)
	})
}
