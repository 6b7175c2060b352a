package jobgraph

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
)

// TestListGroupsCounts follows groups through every way a group settles (its last report, a
// cancel with nothing running, a cancel waiting for a running build) and every way a settled
// group opens again (River UI's Retry of a job, the API's retry of the group), and requires the
// list and the group's own answer to give its jobs' states as they are at each step: the counts
// recorded when a group settles must be cleared when it reopens and recorded anew when it settles
// again. Each group has a target of its own, so each test takes only its own group's builds.
func TestListGroupsCounts(t *testing.T) {
	t.Parallel()

	t.Run("Open", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "open"), spec("b", "open"), spec("c", "open", "a"))
		b.requireListed(t, g, GroupQueued, map[JobState]int{Ready: 2, Waiting: 1})

		a := b.take(t, "open")
		var started Started
		started.Add(a, "w1", time.Now())
		require.NoError(t, started.Mark(ctx, b.tx))
		b.requireListed(t, g, GroupDispatching, map[JobState]int{Running: 1, Ready: 1, Waiting: 1})
		b.report(t, a, queue.BuildSucceeded)
		b.requireListed(t, g, GroupDispatching, map[JobState]int{Complete: 1, Ready: 2})
	})

	t.Run("SettledByReportsThenReopenedByRerun", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "rerun"), spec("b", "rerun", "a"), spec("c", "rerun"))
		a := b.take(t, "rerun")
		b.report(t, a, queue.BuildFailed)
		b.report(t, b.take(t, "rerun"), queue.BuildSucceeded)
		b.requireListed(t, g, GroupFailed, map[JobState]int{JobFailed: 1, DependencyFailed: 1, Complete: 1})

		_, err := b.graph.RerunTx(ctx, b.tx, a.JobID, "test retry")
		require.NoError(t, err)
		b.requireListed(t, g, GroupDispatching, map[JobState]int{Ready: 1, Waiting: 1, Complete: 1})
		b.report(t, b.take(t, "rerun"), queue.BuildSucceeded)
		b.report(t, b.take(t, "rerun"), queue.BuildSucceeded)
		b.requireListed(t, g, GroupComplete, map[JobState]int{Complete: 3})
	})

	t.Run("CancelledAtOnceThenRetried", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "retry"), spec("b", "retry", "a"))
		_, err := b.graph.CancelTx(ctx, b.tx, g, "test")
		require.NoError(t, err)
		b.requireListed(t, g, GroupCanceled, map[JobState]int{CancelComplete: 2})

		_, err = b.graph.RetryTx(ctx, b.tx, g)
		require.NoError(t, err)
		b.requireListed(t, g, GroupDispatching, map[JobState]int{Ready: 1, Waiting: 1})
		b.report(t, b.take(t, "retry"), queue.BuildSucceeded)
		b.report(t, b.take(t, "retry"), queue.BuildFailed)
		b.requireListed(t, g, GroupFailed, map[JobState]int{Complete: 1, JobFailed: 1})
	})

	t.Run("CancelledWhileRunning", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		g := b.submit(t, spec("a", "cancel"), spec("b", "cancel", "a"), spec("c", "cancel"))
		b.report(t, b.take(t, "cancel"), queue.BuildSucceeded)
		running := b.take(t, "cancel")
		var started Started
		started.Add(running, "w1", time.Now())
		require.NoError(t, started.Mark(ctx, b.tx))
		_, err := b.graph.CancelTx(ctx, b.tx, g, "test")
		require.NoError(t, err)
		b.requireListed(t, g, GroupDispatching, map[JobState]int{Complete: 1, CancelPending: 1, CancelComplete: 1})

		b.report(t, running, queue.BuildCancelled)
		b.requireListed(t, g, GroupCanceled, map[JobState]int{Complete: 1, CancelComplete: 2})
	})
}

// requireListed requires the group list, from a cursor just past group id, and the group's own
// answer to give it in state with counts, and counts to be its jobs' states as they are now.
func (b *testBundle) requireListed(t *testing.T, id int64, state GroupState, counts map[JobState]int) {
	t.Helper()
	ctx := context.Background()
	live := map[JobState]int{}
	rows, err := b.tx.Query(ctx, `SELECT state::text, count(*) FROM job_graph WHERE group_id = $1 GROUP BY 1`, id)
	require.NoError(t, err)
	for rows.Next() {
		var (
			s JobState
			n int
		)
		require.NoError(t, rows.Scan(&s, &n))
		live[s] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, counts, live, "the jobs of group %d", id)

	listed, err := ListGroups(ctx, b.tx, "", id+1, 1)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.Equal(t, id, listed[0].ID)
	require.Equal(t, state, listed[0].State)
	require.Equal(t, counts, listed[0].Counts, "the list's counts of group %d", id)
	total := 0
	for _, n := range counts {
		total += n
	}
	require.Equal(t, total, listed[0].Total)
	require.Equal(t, listed[0], b.group(t, id), "GET /v1/groups/%d agrees with the list", id)
}
