package minersim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
)

// TestFleetDeclines checks each decline kind from the validator's side: the reason on the wire
// and, for busy declines, the verdict receipts.Excuse gives every receipt, judged against the
// fleet's own metagraph as the batch-runner will judge it.
func TestFleetDeclines(t *testing.T) {
	t.Parallel()

	tests := []struct {
		kind     string
		reason   protocol.JobRejectionReason
		verdict  receipts.Reason // for busy kinds with receipts
		receipts bool
	}{
		{DeclineNoReason, protocol.RejectionUnknown, "", false},
		{DeclineBusy, protocol.RejectionBusy, "", false},
		{DeclineInvalidSignature, protocol.RejectionInvalidSignature, "", false},
		{DeclineNoMinerForJob, protocol.RejectionNoMinerForJob, "", false},
		{DeclineValidatorBlacklisted, protocol.RejectionValidatorBlacklisted, "", false},
		{DeclineBusyValid, protocol.RejectionBusy, receipts.ReasonValid, true},
		{DeclineBusyWrongType, protocol.RejectionBusy, receipts.ReasonNotJobStarted, true},
		{DeclineBusyNotOrganic, protocol.RejectionBusy, receipts.ReasonNotOrganic, true},
		{DeclineBusyOtherMiner, protocol.RejectionBusy, receipts.ReasonOtherMiner, true},
		{DeclineBusySameJob, protocol.RejectionBusy, receipts.ReasonSameJob, true},
		{DeclineBusyOtherClass, protocol.RejectionBusy, receipts.ReasonOtherClass, true},
		{DeclineBusyFuture, protocol.RejectionBusy, receipts.ReasonNotYetStarted, true},
		{DeclineBusyExpired, protocol.RejectionBusy, receipts.ReasonExpired, true},
		{DeclineBusyBadSignature, protocol.RejectionBusy, receipts.ReasonBadSignature, true},
		{DeclineBusyInactive, protocol.RejectionBusy, receipts.ReasonInactiveValidator, true},
		{DeclineBusyLowStake, protocol.RejectionBusy, receipts.ReasonLowStake, true},
		{DeclineBusyUnknownValidator, protocol.RejectionBusy, receipts.ReasonUnknownValidator, true},
	}
	require.Len(t, tests, len(DeclineKinds()), "every decline kind is tested")

	scenario := Scenario{Miners: map[int]Behaviour{}}
	for i, tt := range tests {
		scenario.Miners[i] = Behaviour{Decline: tt.kind}
	}
	const executors = 3
	f := startFleet(t, Config{
		Miners: len(tests), Scenario: scenario, Manifest: protocol.Manifest{{Class: testClass, Count: executors}},
	})
	lookup := metagraphLookup(f.Metagraph())

	for i, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()

			v := dialMiner(t, f.Miners()[i], aliceKey(t), aliceKey(t).Address())
			v.auth()
			expect[*protocol.V0ExecutorManifestRequest](v)
			j := v.newJob(testClass)
			v.sendInitial(j)

			decline := expect[*protocol.V0DeclineJobRequest](v)
			require.Equal(t, j.uuid, decline.JobUUID)
			require.Equal(t, tt.reason, decline.Reason)
			if !tt.receipts {
				require.Empty(t, decline.Receipts)
				return
			}
			require.Len(t, decline.Receipts, executors)
			excuse := receipts.Excuse{
				JobUUID: j.uuid, MinerHotkey: v.miner.Hotkey, ExecutorClass: testClass,
				StartedAt: j.started.Timestamp, OwnHotkey: v.key.Address(),
				MinStake: receipts.DefaultMinExcuseStake, Leeway: receipts.DefaultExcuseLeeway, Lookup: lookup,
			}
			for _, r := range decline.Receipts {
				require.Equal(t, tt.verdict, excuse.Check(r))
				require.NoError(t, r.VerifyMiner(), "the miner signs every receipt it shows")
			}
			require.Equal(t, tt.verdict == receipts.ReasonValid, receipts.Excused(0, excuse.CountValid(decline.Receipts), executors))
			rec := waitJob(t, f, j.uuid, func(r JobRecord) bool { return r.Response != "none" })
			require.Equal(t, "declined:"+tt.kind, rec.Response)
			require.Zero(t, f.Stats()[i].BusyExecutors, "a declined job holds no executor")
		})
	}
}

// metagraphLookup reads validators' stake and permit from the metagraph, as miner-sync will.
func metagraphLookup(g Metagraph) func(string) (receipts.Validator, bool) {
	byHotkey := map[string]receipts.Validator{}
	for _, n := range g.Miners {
		byHotkey[n.Hotkey] = receipts.Validator{Stake: n.Stake, Active: n.Validator}
	}
	return func(hotkey string) (receipts.Validator, bool) {
		v, ok := byHotkey[hotkey]
		return v, ok
	}
}
