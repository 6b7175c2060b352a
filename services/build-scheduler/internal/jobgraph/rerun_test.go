package jobgraph

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/problem"
)

// A build cancelled alone (River UI's Cancel on its running River job) takes its dependents with it,
// as a failure does; independent jobs go on, and the group ends canceled.
func TestCancelledBuildCancelsItsDependents(t *testing.T) {
	t.Parallel()
	b, _ := setup(t)
	g := b.submit(t, spec("top", "linux"), spec("mid", "linux", "top"), spec("bottom", "linux", "mid"), spec("aside", "linux"))
	top := b.take(t, "linux")
	require.Equal(t, "top", top.Name)
	res := b.report(t, top, queue.BuildCancelled)
	require.Equal(t, CancelComplete, res.State)
	require.Equal(t, GroupDispatching, res.GroupState, "aside has yet to run")
	require.Equal(t, map[JobState]int{CancelComplete: 3, Ready: 1}, b.group(t, g).Counts)

	require.Equal(t, GroupCanceled, b.report(t, b.take(t, "linux"), queue.BuildSucceeded).GroupState)
	require.Equal(t, map[JobState]int{CancelComplete: 3, Complete: 1}, b.group(t, g).Counts)
}

func TestRerun(t *testing.T) {
	t.Parallel()

	t.Run("FailedJobRunsAgainWithItsDependents", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"), spec("c", "linux", "b"), spec("other", "windows"))
		a := b.take(t, "linux")
		b.report(t, a, queue.BuildFailed)
		b.report(t, b.take(t, "windows"), queue.BuildSucceeded)
		require.Equal(t, GroupFailed, b.group(t, g).State)
		builds := b.builds(t, "linux")

		r, err := b.graph.RerunTx(ctx, b.tx, a.JobID, "test retry")
		require.NoError(t, err)
		require.Equal(t, JobFailed, r.State)
		require.Len(t, r.Reset, 3, "a, and b and c that failed with it")
		require.True(t, r.Reopened)
		require.Equal(t, 2, r.Attempt, "the rerun is the job's next attempt")
		require.NotZero(t, r.RiverJobID)
		require.Equal(t, builds+1, b.builds(t, "linux"), "the new attempt has a River job of its own")
		require.Equal(t, map[JobState]int{Ready: 1, Waiting: 2, Complete: 1}, b.group(t, g).Counts)
		require.Equal(t, GroupDispatching, b.group(t, g).State)
		events, err := Events(ctx, b.tx, g, 1)
		require.NoError(t, err)
		require.Equal(t, EventRiverUIAction, events[0].Kind)
		require.Contains(t, events[0].Message, "test retry: job")
		require.Contains(t, events[0].Message, "as attempt 2")

		again := b.take(t, "linux")
		require.Equal(t, a.JobID, again.JobID)
		require.Equal(t, 2, again.Attempt, "its River job names the attempt")
		b.report(t, again, queue.BuildSucceeded)
		b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
		require.Equal(t, GroupComplete, b.report(t, b.take(t, "linux"), queue.BuildSucceeded).GroupState)
	})

	t.Run("OlderGroupsReadyJobComesFirst", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		older := b.submit(t, spec("old", "linux"))
		g := b.submit(t, spec("a", "linux"))
		oldJob := b.take(t, "linux")
		a := b.take(t, "linux")
		b.report(t, a, queue.BuildFailed)
		b.report(t, oldJob, queue.BuildFailed)
		_, err := b.graph.RetryTx(ctx, b.tx, older) // old is ready again, with a River job of its own
		require.NoError(t, err)

		_, err = b.graph.RerunTx(ctx, b.tx, a.JobID, "test retry")
		require.NoError(t, err)
		require.Equal(t, Ready, b.state(t, g, "a"))
		require.Equal(t, "old", b.take(t, "linux").Name, "the oldest group's job first")
		require.Equal(t, "a", b.take(t, "linux").Name)
	})

	t.Run("CancelledJobOfACancelledGroup", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"), spec("aside", "linux"))
		a := b.take(t, "linux")
		var started Started
		started.Add(a, "w1", time.Now())
		require.NoError(t, started.Mark(ctx, b.tx))
		_, err := b.graph.CancelTx(ctx, b.tx, g, "test")
		require.NoError(t, err)
		require.Equal(t, GroupCanceled, b.report(t, a, queue.BuildCancelled).GroupState)

		r, err := b.graph.RerunTx(ctx, b.tx, a.JobID, "test retry")
		require.NoError(t, err)
		require.Len(t, r.Reset, 2, "a and b")
		require.Equal(t, map[JobState]int{Ready: 1, Waiting: 1, CancelComplete: 1}, b.group(t, g).Counts)
		b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
		require.Equal(t, GroupCanceled, b.report(t, b.take(t, "linux"), queue.BuildSucceeded).GroupState,
			"aside stays cancelled, and so does its group")
		require.False(t, b.group(t, g).CancelRequested)
	})

	t.Run("DependentWaitingOnAnotherFailedJobFailsAgain", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux"), spec("join", "linux", "a", "b"))
		a, bj := b.take(t, "linux"), b.take(t, "linux")
		b.report(t, a, queue.BuildFailed)
		b.report(t, bj, queue.BuildFailed)

		_, err := b.graph.RerunTx(ctx, b.tx, a.JobID, "test retry")
		require.NoError(t, err)
		require.Equal(t, DependencyFailed, b.state(t, g, "join"), "b is still failed")
		require.Equal(t, GroupFailed, b.report(t, b.take(t, "linux"), queue.BuildSucceeded).GroupState)
	})

	t.Run("OnlyAFailedOrCancelledJob", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		a := b.take(t, "linux")
		b.report(t, a, queue.BuildSucceeded)
		events, err := Events(ctx, b.tx, g, 100)
		require.NoError(t, err)

		r, err := b.graph.RerunTx(ctx, b.tx, a.JobID, "test retry")
		require.ErrorIs(t, err, problem.ErrConflict)
		require.Equal(t, Complete, r.State)
		require.Equal(t, g, r.GroupID)
		after, err := Events(ctx, b.tx, g, 100)
		require.NoError(t, err)
		require.Equal(t, events, after, "nothing recorded")
		require.Equal(t, Ready, b.state(t, g, "b"))
	})
}
