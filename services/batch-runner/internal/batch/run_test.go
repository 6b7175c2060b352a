package batch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/computehorde/minersim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunSingleMiner(t *testing.T) {
	t.Parallel()

	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, minersim.Config{Miners: 1})
		res := bundle.run(t)
		require.Len(t, res.Jobs, 1)
		j := res.Jobs[0]
		require.Equal(t, OutcomeCompleted, j.Outcome, j.Detail)
		require.InDelta(t, 1.0, j.Score, 0)
		require.Positive(t, j.TimeTook)
		require.False(t, j.AfterSend.Before(j.BeforeSend))
		// The miner checks the JobFinished receipt on its own goroutine after Run returns. The
		// bound is how long to wait before calling it lost, not a speed requirement.
		require.Eventually(t, func() bool {
			jobs := bundle.fleet.Jobs()
			return len(jobs) == 1 && jobs[0].FinishedReceipt != ""
		}, 10*time.Second, 5*time.Millisecond)
		jobs := bundle.fleet.Jobs()
		require.Equal(t, "valid", jobs[0].StartedReceipt)
		require.Equal(t, "valid", jobs[0].AcceptedReceipt)
		require.Equal(t, "valid", jobs[0].FinishedReceipt)
	})
}
