package batch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/services/batch-runner/internal/sysevent"
)

func dur(d time.Duration) minersim.Duration { return minersim.Duration(d) }

// TestRunSingleMinerScenarios covers reference section 8's single-miner cases and the stages a
// miner can fall silent at, each on a fleet of one.
func TestRunSingleMinerScenarios(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name      string
		behaviour minersim.Behaviour
		jobs      int
		outcome   Outcome
		reason    Reason
		event     sysevent.Subtype
	}{
		{"Success", minersim.Behaviour{}, 1, OutcomeCompleted, ReasonSuccess, sysevent.Success},
		{"Late", minersim.Behaviour{AnswerDelay: dur(1100 * time.Millisecond)}, 1, OutcomeFailed, ReasonOverTimeLimit, sysevent.JobExecutionTimeout},
		{"JobFailed", minersim.Behaviour{Answer: minersim.AnswerFail}, 1, OutcomeFailed, ReasonJobFailed, sysevent.Failure},
		{"WrongAnswer", minersim.Behaviour{Answer: minersim.AnswerWrong}, 1, OutcomeFailed, ReasonWrongAnswer, sysevent.Failure},
		{"Declined", minersim.Behaviour{Decline: minersim.DeclineNoReason}, 1, OutcomeFailed, ReasonDeclined, sysevent.JobRejected},
		{"HordeFailed", minersim.Behaviour{Answer: minersim.AnswerHordeFailed}, 1, OutcomeFailed, ReasonHordeFailed, sysevent.HordeFailed},
		{"NoManifest", minersim.Behaviour{Silent: minersim.StageManifest}, 0, "", "", sysevent.ManifestTimeout},
		{"SilentAtAccept", minersim.Behaviour{Silent: minersim.StageAccept}, 1, OutcomeFailed, ReasonNoResponse, sysevent.JobNotStarted},
		{"SilentAtReady", minersim.Behaviour{Silent: minersim.StageReady}, 1, OutcomeFailed, ReasonNotReady, sysevent.JobNotStarted},
		{"SilentAtAnswer", minersim.Behaviour{Silent: minersim.StageAnswer}, 1, OutcomeFailed, ReasonTimeout, sysevent.JobExecutionTimeout},
		{"DisconnectAtAnswer", minersim.Behaviour{Disconnect: minersim.StageAnswer}, 1, OutcomeFailed, ReasonTimeout, sysevent.JobExecutionTimeout},
		{"MalformedBeforeAnswer", minersim.Behaviour{Malformed: minersim.StageAnswer}, 1, OutcomeCompleted, ReasonSuccess, sysevent.MalformedFrame},
		{"DuplicateAnswer", minersim.Behaviour{Duplicate: minersim.StageAnswer}, 1, OutcomeCompleted, ReasonSuccess, sysevent.Duplicate},
		{"UnknownJobBeforeAccept", minersim.Behaviour{UnknownJob: minersim.StageAccept}, 1, OutcomeCompleted, ReasonSuccess, sysevent.UnknownJob},
		{"OversizedBeforeReady", minersim.Behaviour{Oversize: minersim.StageReady}, 1, OutcomeFailed, ReasonNotReady, sysevent.JobNotStarted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bundle := setup(t, minersim.Config{Miners: 1, Scenario: minersim.Scenario{Default: tc.behaviour}})
			res := bundle.run(t)
			require.Len(t, res.Jobs, tc.jobs)
			if tc.jobs > 0 {
				require.Equal(t, tc.outcome, res.Jobs[0].Outcome, res.Jobs[0].Detail)
				require.Equal(t, tc.reason, res.Jobs[0].Reason, res.Jobs[0].Detail)
			}
			require.Positive(t, eventCount(res, tc.event), "want a %s event", tc.event)
		})
	}
}

func TestRunNineMinersAllSucceed(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 9})
	res := bundle.run(t)
	require.Equal(t, map[Outcome]int{OutcomeCompleted: 9}, outcomes(res))
	require.Positive(t, res.SendSpread)
}

// TestRunComplexNineMinerBatch is upstream's complex batch: one flow per miner, 8 jobs, 1
// successful, 1 excused, 6 failed.
func TestRunComplexNineMinerBatch(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 9, Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{
		1: {AnswerDelay: dur(1100 * time.Millisecond)},
		2: {Answer: minersim.AnswerFail},
		3: {Decline: minersim.DeclineNoReason},
		4: {Decline: minersim.DeclineBusy},
		5: {Decline: minersim.DeclineBusyNotOrganic},
		6: {Decline: minersim.DeclineBusyValid},
		7: {Decline: minersim.DeclineBusyLowStake},
		8: {Silent: minersim.StageManifest},
	}}})
	bundle.cfg.SpinUps = map[string]time.Duration{"*": 1500 * time.Millisecond}
	res := bundle.run(t)
	require.Len(t, res.Jobs, 8)
	require.Equal(t, map[Outcome]int{OutcomeCompleted: 1, OutcomeExcused: 1, OutcomeFailed: 6}, outcomes(res))
	require.Equal(t, 1, eventCount(res, sysevent.ManifestTimeout))
}

// TestRunBusyExcuseRules checks that each broken receipt rule leaves a busy decline unexcused.
func TestRunBusyExcuseRules(t *testing.T) {
	t.Parallel()
	kinds := []string{
		minersim.DeclineBusyWrongType, minersim.DeclineBusyNotOrganic, minersim.DeclineBusyOtherMiner,
		minersim.DeclineBusySameJob, minersim.DeclineBusyOtherClass, minersim.DeclineBusyFuture,
		minersim.DeclineBusyExpired, minersim.DeclineBusyBadSignature, minersim.DeclineBusyInactive,
		minersim.DeclineBusyLowStake, minersim.DeclineBusyUnknownValidator,
	}
	miners := map[int]minersim.Behaviour{}
	for i, k := range kinds {
		miners[i] = minersim.Behaviour{Decline: k}
	}
	miners[len(kinds)] = minersim.Behaviour{Decline: minersim.DeclineBusyValid}
	bundle := setup(t, minersim.Config{Miners: len(kinds) + 1, Scenario: minersim.Scenario{Miners: miners}})
	// Busy declines carry receipts the fleet signs on the spot: give a loaded -race run time.
	bundle.cfg.SpinUps = map[string]time.Duration{"*": 1500 * time.Millisecond}
	res := bundle.run(t)
	require.Equal(t, map[Reason]int{ReasonBusyUnexcused: len(kinds), ReasonBusyExcused: 1}, reasons(res))
}

func TestRunTenExecutorsTenReceipts(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 1, Manifest: manifestOf("always_on.test", 10)})
	res := bundle.run(t)
	require.Equal(t, map[Outcome]int{OutcomeCompleted: 10}, outcomes(res))
	finished := 0
	for _, r := range res.Receipts {
		if r.Type == "JobFinishedReceipt" && r.Error == "" {
			finished++
		}
	}
	require.Equal(t, 10, finished)
	require.Eventually(t, func() bool {
		n := 0
		for _, j := range bundle.fleet.Jobs() {
			if j.FinishedReceipt == "valid" {
				n++
			}
		}
		return n == 10
	}, 10*time.Second, 5*time.Millisecond, "the miner verified ten JobFinished receipts") // a wait, not a speed bound
}

// TestRunEventLimits: a miner that fails every one of its 20 jobs the same way yields 10 events of
// that kind and one EVENTS_DROPPED that counts the rest, so it cannot flood the events table.
// The miner stays silent rather than declining: a decline must beat the spin-up deadline, which a
// loaded -race run can miss for some jobs (10 declines, 10 no-responses: nothing dropped), while
// silence ends every job the same way however slow the machine is.
func TestRunEventLimits(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 1, Manifest: manifestOf("always_on.test", 20),
		Scenario: minersim.Scenario{Default: minersim.Behaviour{Silent: minersim.StageAccept}}})
	bundle.cfg.ManifestTimeout = 10 * time.Second // a bound on a wait that ends at the manifest
	res := bundle.run(t)
	require.Equal(t, map[Reason]int{ReasonNoResponse: 20}, reasons(res))
	require.Equal(t, 10, eventCount(res, sysevent.JobNotStarted))
	var dropped []sysevent.Event
	for _, e := range res.Events {
		if e.Subtype == sysevent.Dropped {
			dropped = append(dropped, e)
		}
	}
	require.Len(t, dropped, 1)
	require.JSONEq(t, `{"type":"MINER_SYNTHETIC_JOB_FAILURE","subtype":"JOB_NOT_STARTED","recorded":20,"kept":10}`,
		string(dropped[0].Data))
}

// TestRunMinerNotReadingDelaysNobody: one miner stops reading its socket after accepting, so its
// job request write blocks; the write deadline cuts it off and every other miner is served.
func TestRunMinerNotReadingDelaysNobody(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 3, Manifest: manifestOf("always_on.test", 2),
		Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{0: {StopReading: minersim.StageReady}}}})
	stuck := bundle.fleet.Miners()[0].Hotkey
	bundle.cfg.Generators = Generators{"*": paddedPoW{limit: 5 * time.Second, pad: 3 << 20, miner: stuck}}
	bundle.cfg.WriteTimeout = 700 * time.Millisecond
	bundle.cfg.MaxFrameSize = 16 << 20
	// The stuck miner's 6 MB of frames take about a second to encode and mask under -race, and
	// several times that on a loaded machine, all before the release. The hot phase moves the
	// read deadlines by TimeLimit + JobExtra + ReceiptTimeout + 2·WriteTimeout before it builds
	// the frames; with the 3.7 s that setup's timings give, every reader timed out first and
	// every send failed with "connection closed". These bounds cap waits that end as soon as the
	// miners answer, so they cost nothing on a quiet machine.
	bundle.cfg.ManifestTimeout, bundle.cfg.ReadyGrace = 10*time.Second, 5*time.Second
	bundle.cfg.JobExtra = time.Minute
	// The spin-up is slept in full, so it is the one bound here a quiet run pays. The accepts
	// come within ~10 ms on a quiet -race run and ~100 ms under heavy load, but a loaded run
	// missed a 1 s deadline 2 times in 20: 2 s.
	bundle.cfg.SpinUps = map[string]time.Duration{"*": 2 * time.Second}
	res := bundle.run(t)
	// The stuck write ends no sooner than its deadline (BeforeSend + WriteTimeout). An honest
	// send that waited behind it would end after that too, so each must end before the stuck one
	// was cut off. A relative order, not a wall-clock bound: a loaded machine delays both alike.
	var cutOff time.Time
	for _, j := range res.Jobs {
		if j.Miner == stuck {
			require.Equal(t, ReasonSendError, j.Reason, j.Detail)
			require.GreaterOrEqual(t, j.AfterSend.Sub(j.BeforeSend), bundle.cfg.WriteTimeout, j.Detail)
			if cutOff.IsZero() || j.AfterSend.Before(cutOff) {
				cutOff = j.AfterSend
			}
		}
	}
	require.False(t, cutOff.IsZero(), "the stuck miner's send was recorded")
	for _, j := range res.Jobs {
		if j.Miner == stuck {
			continue
		}
		require.Equal(t, OutcomeCompleted, j.Outcome, j.Detail)
		require.True(t, j.AfterSend.Before(cutOff), "an honest miner's send waited for the stuck miner's deadline")
	}
	require.Positive(t, eventCount(res, sysevent.MinerSendError))
}
