package batch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/synthetic"
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
		// tune shortens the bound a case's miner is meant to miss; nil keeps setup's generous ones.
		tune func(*Config)
	}{
		{"Success", minersim.Behaviour{}, 1, OutcomeCompleted, ReasonSuccess, sysevent.Success, nil},
		// Late's answer is over the 1 s limit by construction (the delay runs from its arrival, after
		// the send), and JobExtra gives it 2 s more to arrive so it is judged late, not missing.
		{"Late", minersim.Behaviour{AnswerDelay: dur(1100 * time.Millisecond)}, 1, OutcomeFailed, ReasonOverTimeLimit, sysevent.JobExecutionTimeout, lateLimit},
		{"JobFailed", minersim.Behaviour{Answer: minersim.AnswerFail}, 1, OutcomeFailed, ReasonJobFailed, sysevent.Failure, nil},
		{"WrongAnswer", minersim.Behaviour{Answer: minersim.AnswerWrong}, 1, OutcomeFailed, ReasonWrongAnswer, sysevent.Failure, nil},
		{"Declined", minersim.Behaviour{Decline: minersim.DeclineNoReason}, 1, OutcomeFailed, ReasonDeclined, sysevent.JobRejected, nil},
		{"HordeFailed", minersim.Behaviour{Answer: minersim.AnswerHordeFailed}, 1, OutcomeFailed, ReasonHordeFailed, sysevent.HordeFailed, nil},
		{"NoManifest", minersim.Behaviour{Silent: minersim.StageManifest}, 0, "", "", sysevent.ManifestTimeout, nil},
		{"SilentAtAccept", minersim.Behaviour{Silent: minersim.StageAccept}, 1, OutcomeFailed, ReasonNoResponse, sysevent.JobNotStarted, nil},
		{"SilentAtReady", minersim.Behaviour{Silent: minersim.StageReady}, 1, OutcomeFailed, ReasonNotReady, sysevent.JobNotStarted, quickReady},
		{"SilentAtAnswer", minersim.Behaviour{Silent: minersim.StageAnswer}, 1, OutcomeFailed, ReasonTimeout, sysevent.JobExecutionTimeout, quickAnswer},
		{"DisconnectAtAnswer", minersim.Behaviour{Disconnect: minersim.StageAnswer}, 1, OutcomeFailed, ReasonTimeout, sysevent.JobExecutionTimeout, quickAnswer},
		{"MalformedBeforeAnswer", minersim.Behaviour{Malformed: minersim.StageAnswer}, 1, OutcomeCompleted, ReasonSuccess, sysevent.MalformedFrame, nil},
		{"DuplicateAnswer", minersim.Behaviour{Duplicate: minersim.StageAnswer}, 1, OutcomeCompleted, ReasonSuccess, sysevent.Duplicate, nil},
		{"UnknownJobBeforeAccept", minersim.Behaviour{UnknownJob: minersim.StageAccept}, 1, OutcomeCompleted, ReasonSuccess, sysevent.UnknownJob, nil},
		{"OversizedBeforeReady", minersim.Behaviour{Oversize: minersim.StageReady}, 1, OutcomeFailed, ReasonNotReady, sysevent.JobNotStarted, quickReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bundle := setup(t, minersim.Config{Miners: 1, Scenario: minersim.Scenario{Default: tc.behaviour}})
			if tc.tune != nil {
				tc.tune(&bundle.cfg)
			}
			res := bundle.run(t)
			require.Len(t, res.Jobs, tc.jobs, jobsReport(res))
			if tc.jobs > 0 {
				require.Equal(t, tc.outcome, res.Jobs[0].Outcome, jobsReport(res))
				require.Equal(t, tc.reason, res.Jobs[0].Reason, jobsReport(res))
			}
			require.Positive(t, eventCount(res, tc.event), "want a %s event", tc.event)
		})
	}
}

// lateLimit gives every job a 1 s time limit, for a case whose miner answers just after it.
func lateLimit(c *Config) {
	c.Generators = Generators{"*": synthetic.PoWGenerator{Range: 1 << 10, Limit: time.Second}}
}

func TestRunNineMinersAllSucceed(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 9})
	res := bundle.run(t)
	require.Equal(t, map[Outcome]int{OutcomeCompleted: 9}, outcomes(res), jobsReport(res))
	require.Positive(t, res.SendSpread)
}

// TestRunComplexNineMinerBatch is upstream's complex batch: one flow per miner, 8 jobs, 1
// successful, 1 excused, 6 failed.
func TestRunComplexNineMinerBatch(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 9, Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{
		1: {AnswerDelay: dur(testLimit + 100*time.Millisecond)},
		2: {Answer: minersim.AnswerFail},
		3: {Decline: minersim.DeclineNoReason},
		4: {Decline: minersim.DeclineBusy},
		5: {Decline: minersim.DeclineBusyNotOrganic},
		6: {Decline: minersim.DeclineBusyValid},
		7: {Decline: minersim.DeclineBusyLowStake},
		8: {Silent: minersim.StageManifest},
	}}})
	res := bundle.run(t)
	require.Len(t, res.Jobs, 8, jobsReport(res))
	require.Equal(t, map[Outcome]int{OutcomeCompleted: 1, OutcomeExcused: 1, OutcomeFailed: 6}, outcomes(res), jobsReport(res))
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
	res := bundle.run(t)
	require.Equal(t, map[Reason]int{ReasonBusyUnexcused: len(kinds), ReasonBusyExcused: 1}, reasons(res), jobsReport(res))
}

func TestRunTenExecutorsTenReceipts(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 1, Manifest: manifestOf("always_on.test", 10)})
	res := bundle.run(t)
	require.Equal(t, map[Outcome]int{OutcomeCompleted: 10}, outcomes(res), jobsReport(res))
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
	require.Equal(t, map[Reason]int{ReasonNoResponse: 20}, reasons(res), jobsReport(res))
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
	// the frames; with the 3.7 s that short test timings once gave, every reader timed out first
	// and every send failed with "connection closed". These bounds cap waits that end as soon as the
	// miners answer, so they cost nothing on a quiet machine.
	bundle.cfg.ManifestTimeout, bundle.cfg.ReadyGrace = 10*time.Second, 5*time.Second
	bundle.cfg.JobExtra = time.Minute
	// The spin-up is setup's 2 s: the accepts come within ~10 ms on a quiet -race run and ~100 ms
	// under heavy load, but a loaded run missed a 1 s deadline 2 times in 20.
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
