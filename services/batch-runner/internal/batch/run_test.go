package batch

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/computehorde/minersim"
	"drover.dev/shared/tracing"
)

// TestMain runs more tests at once than go test's default of GOMAXPROCS, unless -parallel is
// given. Each batch test spends most of its time asleep in a spin-up or a wait for a silent
// miner, and setup's bounds are generous so that a loaded machine cannot fail an honest miner
// (see testSpinUp); with two cores, two at a time would serialise those sleeps and more than
// double the package's time.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(8, runtime.GOMAXPROCS(0))))
	}
	var ignore []goleak.Option
	if tracing.Configured() {
		// A traced benchmark's exporter keeps its connection to the collector alive after
		// shutdown (net/http's idle connection); it is no goroutine of the batch's.
		ignore = append(ignore, goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
	}
	goleak.VerifyTestMain(m, ignore...)
}

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
