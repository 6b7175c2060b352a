package jobgraph

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
)

// The scenarios Habitat Builder's job server tested, on the real schema.
func TestReferenceScenarios(t *testing.T) {
	t.Parallel()

	t.Run("ChainAddedHasOneWaitingOneReady", func(t *testing.T) {
		t.Parallel()
		b, _ := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		require.Equal(t, map[JobState]int{Waiting: 1, Ready: 1}, b.group(t, g).Counts)
		require.Equal(t, 1, b.builds(t, "linux"))

		require.Equal(t, "a", b.take(t, "linux").Name)
		_, ok := next(t, b.tx, "windows", nil)
		require.False(t, ok, "another target gets nothing")
	})

	t.Run("ChainRootFails", func(t *testing.T) {
		t.Parallel()
		b, _ := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		res := b.report(t, b.take(t, "linux"), queue.BuildFailed)
		require.Equal(t, GroupFailed, res.GroupState)
		require.Equal(t, map[JobState]int{JobFailed: 1, DependencyFailed: 1}, b.group(t, g).Counts)
	})

	t.Run("ChainCompletes", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		a := b.take(t, "linux")
		require.Equal(t, GroupDispatching, b.report(t, a, queue.BuildSucceeded).GroupState)
		require.Equal(t, Ready, b.state(t, g, "b"))
		require.Equal(t, 2, b.builds(t, "linux"))
		job, err := GetJob(ctx, b.tx, a.JobID)
		require.NoError(t, err)
		require.Equal(t, "a/1.0", *job.AsBuilt)

		require.Equal(t, GroupComplete, b.report(t, b.take(t, "linux"), queue.BuildSucceeded).GroupState)
		require.Equal(t, map[JobState]int{Complete: 2}, b.group(t, g).Counts)
	})

	t.Run("DiamondSideFails", func(t *testing.T) {
		t.Parallel()
		b, _ := setup(t)
		g := b.submit(t, spec("top", "linux"), spec("left", "linux", "top"), spec("right", "linux", "top"),
			spec("bottom", "linux", "left", "right"))
		b.report(t, b.take(t, "linux"), queue.BuildSucceeded)
		require.Equal(t, 2, b.group(t, g).Counts[Ready])

		left := b.take(t, "linux")
		require.Equal(t, "left", left.Name)
		b.report(t, left, queue.BuildFailed)
		require.Equal(t, DependencyFailed, b.state(t, g, "bottom"))
		require.Equal(t, Ready, b.state(t, g, "right"), "an independent branch goes on")

		require.Equal(t, GroupFailed, b.report(t, b.take(t, "linux"), queue.BuildSucceeded).GroupState)
		require.Equal(t, map[JobState]int{Complete: 2, JobFailed: 1, DependencyFailed: 1}, b.group(t, g).Counts)
	})

	t.Run("DiamondRootFails", func(t *testing.T) {
		t.Parallel()
		b, _ := setup(t)
		g := b.submit(t, spec("top", "linux"), spec("left", "linux", "top"), spec("right", "linux", "top"),
			spec("bottom", "linux", "left", "right"))
		b.report(t, b.take(t, "linux"), queue.BuildFailed)
		require.Equal(t, map[JobState]int{JobFailed: 1, DependencyFailed: 3}, b.group(t, g).Counts)
		require.Equal(t, GroupFailed, b.group(t, g).State)
	})

	t.Run("OlderGroupFirstThenPriority", func(t *testing.T) {
		t.Parallel()
		b, _ := setup(t)
		low, high := spec("low", "linux"), spec("high", "linux")
		high.Priority = 5
		older := b.submit(t, spec("x", "linux"), low, high)
		newer := b.submit(t, spec("x", "linux"), low, high)
		var order []string
		for range 6 {
			c := b.take(t, "linux")
			order = append(order, map[int64]string{older: "old:", newer: "new:"}[c.GroupID]+c.Name)
		}
		require.Equal(t, []string{"old:high", "old:x", "old:low", "new:high", "new:x", "new:low"}, order)
	})

	t.Run("InterleavedGroups", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g1 := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		a1 := b.take(t, "linux")
		g2 := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
		a2 := b.take(t, "linux")
		require.Equal(t, g2, a2.GroupID)
		require.Equal(t, map[JobState]int{Ready: 1, Waiting: 1}, b.group(t, g2).Counts, "ready until its worker marks it")
		var started Started
		started.Add(a2, "w1", time.Now())
		started.Groups = []int64{g2}
		require.NoError(t, started.Mark(ctx, b.tx))
		require.Equal(t, GroupDispatching, b.group(t, g2).State)
		b.report(t, a1, queue.BuildSucceeded)
		require.Equal(t, map[JobState]int{Complete: 1, Ready: 1}, b.group(t, g1).Counts)
		require.Equal(t, map[JobState]int{Running: 1, Waiting: 1}, b.group(t, g2).Counts)
		b1 := b.take(t, "linux")
		require.Equal(t, g1, b1.GroupID)
		b.report(t, a2, queue.BuildFailed)
		require.Equal(t, map[JobState]int{JobFailed: 1, DependencyFailed: 1}, b.group(t, g2).Counts)
		b.report(t, b1, queue.BuildSucceeded)
		require.Equal(t, GroupComplete, b.group(t, g1).State)
		require.Equal(t, GroupFailed, b.group(t, g2).State)
	})
}

func TestRepeatedAndLateReportsChangeNothing(t *testing.T) {
	t.Parallel()

	t.Run("Duplicate", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"), spec("b", "linux"), spec("c", "linux", "a", "b"))
		a := b.take(t, "linux")
		require.True(t, b.report(t, a, queue.BuildSucceeded).Applied)
		require.False(t, b.report(t, a, queue.BuildSucceeded).Applied)
		require.False(t, b.report(t, a, queue.BuildFailed).Applied)
		c, err := GetJob(ctx, b.tx, a.JobID+2)
		require.NoError(t, err)
		require.Equal(t, 1, c.WaitingOn, "a repeat must not decrement the dependent twice")
		require.Equal(t, map[JobState]int{Complete: 1, Ready: 1, Waiting: 1}, b.group(t, g).Counts)
	})

	t.Run("FromDeadAttempt", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "linux"))
		first := b.take(t, "linux")
		res, err := b.graph.ReplaceTx(ctx, b.tx, first.JobID, first.Attempt, "test: its worker died")
		require.NoError(t, err)
		require.Equal(t, Ready, res.State)
		require.Equal(t, 2, res.Attempt)
		second := b.take(t, "linux")
		require.Equal(t, 2, second.Attempt)
		require.Equal(t, first.JobID, second.JobID, "the new attempt's River job names the same build")

		require.False(t, b.report(t, first, queue.BuildFailed).Applied, "the dead attempt's report is ignored")
		require.Equal(t, map[JobState]int{Ready: 1}, b.group(t, g).Counts)
		require.True(t, b.report(t, second, queue.BuildSucceeded).Applied)
		require.Equal(t, GroupComplete, b.group(t, g).State)
	})
}

func TestLostWorkerAttemptsAreBounded(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	g := b.submit(t, spec("a", "linux"), spec("b", "linux", "a"))
	for attempt := 1; attempt <= 2; attempt++ {
		c := b.take(t, "linux")
		require.Equal(t, attempt, c.Attempt)
		_, err := b.graph.ReplaceTx(ctx, b.tx, c.JobID, c.Attempt, "test: its worker died")
		require.NoError(t, err)
	}
	_, ok := next(t, b.tx, "linux", b.taken)
	require.False(t, ok, "no third attempt")
	require.Equal(t, map[JobState]int{JobFailed: 1, DependencyFailed: 1}, b.group(t, g).Counts)
	require.Equal(t, GroupFailed, b.group(t, g).State)
	events, err := Events(ctx, b.tx, g, 10)
	require.NoError(t, err)
	require.Contains(t, events[0].Message, "attempt 2 of job")
	require.Contains(t, events[0].Message, "that was its last attempt (2): the job is job_failed")
}
