package jobgraph

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
)

// The liveness sweep's takeover gives a dead worker's build its next attempt, cancels it instead
// when River UI's Cancel was pressed on its River job, and says so of a build that had ended
// before its worker died, which it leaves as it is.
func TestTakeover(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	g := b.submit(t, spec("lost", "linux"), spec("cancelled", "linux"), spec("done", "linux"), spec("after", "linux", "cancelled"))
	rescued := func(id int64, c Build, cancel bool) queue.RescuedJob {
		args, err := json.Marshal(c.args())
		require.NoError(t, err)
		return queue.RescuedJob{ID: id, Attempt: 1, Args: args, Process: "dead-1", CancelRequested: cancel}
	}
	lost, cancelled, done := b.take(t, "linux"), b.take(t, "linux"), b.take(t, "linux")
	b.report(t, done, queue.BuildSucceeded)

	notes, err := b.graph.Takeover(ctx, b.tx, []queue.RescuedJob{
		rescued(1, lost, false), rescued(2, cancelled, true), rescued(3, done, false),
	})
	require.NoError(t, err)
	require.Regexp(t, `^attempt 2 replaces it as River job \d+$`, notes[1])
	require.Equal(t, "the build is cancel_complete, as its Cancel asked", notes[2])
	require.Equal(t, fmt.Sprintf("attempt 1 of build done (job %d) had ended already: the job is complete at attempt 1", done.JobID), notes[3])
	require.Equal(t, Ready, b.state(t, g, "lost"))
	require.Equal(t, CancelComplete, b.state(t, g, "cancelled"))
	require.Equal(t, CancelComplete, b.state(t, g, "after"), "its dependent that had not run goes with it")
	again := b.take(t, "linux")
	require.Equal(t, lost.JobID, again.JobID)
	require.Equal(t, 2, again.Attempt)
}
