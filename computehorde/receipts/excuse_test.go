package receipts

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
)

type excuseBundle struct {
	excuse Excuse
	keys   testKeys
	other  *hotkey.Keypair // a third validator with enough stake
	poor   *hotkey.Keypair // a validator below the minimum stake
	idle   *hotkey.Keypair // an inactive validator
}

func setupExcuse(t *testing.T) excuseBundle {
	t.Helper()

	keys := newTestKeys(t)
	derive := func(uri string) *hotkey.Keypair {
		key, err := hotkey.FromURI(uri)
		require.NoError(t, err)
		return key
	}
	bundle := excuseBundle{keys: keys, other: derive("//Charlie"), poor: derive("//Dave"), idle: derive("//Eve")}
	validators := map[string]Validator{
		bundle.other.Address(): {Stake: 50_000, Active: true},
		bundle.poor.Address():  {Stake: 29_999, Active: true},
		bundle.idle.Address():  {Stake: 90_000, Active: false},
	}
	bundle.excuse = Excuse{
		JobUUID:       "our-job",
		MinerHotkey:   keys.bob.Address(),
		ExecutorClass: "spin_up-4min.gpu-24gb",
		StartedAt:     exampleTime,
		OwnHotkey:     keys.alice.Address(),
		MinStake:      DefaultMinExcuseStake,
		Leeway:        DefaultExcuseLeeway,
		Lookup: func(hotkey string) (Validator, bool) {
			v, ok := validators[hotkey]
			return v, ok
		},
	}
	return bundle
}

// busyReceipt is an organic JobStarted receipt from signer for the bundle's miner, started a
// minute before our job; edit changes the payload before signing.
func (b excuseBundle) busyReceipt(signer *hotkey.Keypair, edit func(*JobStarted)) Receipt {
	payload := &JobStarted{
		Header:        Header{JobUUID: "their-job", MinerHotkey: b.keys.bob.Address(), ValidatorHotkey: signer.Address(), Timestamp: exampleTime.Add(-time.Minute)},
		ExecutorClass: "spin_up-4min.gpu-24gb",
		IsOrganic:     true,
		TTL:           298,
	}
	if edit != nil {
		edit(payload)
	}
	return Receipt{Payload: payload, ValidatorSignature: Sign(payload, signer), MinerSignature: Sign(payload, b.keys.bob)}
}

func TestExcuseCheck(t *testing.T) {
	t.Parallel()

	bundle := setupExcuse(t)
	accepted := &JobAccepted{Header: Header{JobUUID: "x", MinerHotkey: bundle.keys.bob.Address(), ValidatorHotkey: bundle.other.Address(), Timestamp: exampleTime}}
	tamperedSignature := bundle.busyReceipt(bundle.other, nil)
	tamperedSignature.Payload.(*JobStarted).TTL = 299

	tests := []struct {
		name    string
		receipt Receipt
		want    Reason
	}{
		{name: "ValidFromStakedValidator", receipt: bundle.busyReceipt(bundle.other, nil), want: ReasonValid},
		{name: "ValidFromUs", receipt: bundle.busyReceipt(bundle.keys.alice, nil), want: ReasonValid},
		{name: "NotJobStarted", receipt: Receipt{Payload: accepted, ValidatorSignature: Sign(accepted, bundle.other)}, want: ReasonNotJobStarted},
		{name: "NotOrganic", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.IsOrganic = false }), want: ReasonNotOrganic},
		{name: "OtherMiner", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.MinerHotkey = bundle.other.Address() }), want: ReasonOtherMiner},
		{name: "SameJob", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.JobUUID = "our-job" }), want: ReasonSameJob},
		{name: "OtherClass", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.ExecutorClass = "always_on.test" }), want: ReasonOtherClass},
		{name: "UnknownValidator", receipt: bundle.busyReceipt(bundle.keys.bob, nil), want: ReasonUnknownValidator},
		{name: "InactiveValidator", receipt: bundle.busyReceipt(bundle.idle, nil), want: ReasonInactiveValidator},
		{name: "LowStake", receipt: bundle.busyReceipt(bundle.poor, nil), want: ReasonLowStake},
		{name: "SameInstantIsNotBefore", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.Timestamp = exampleTime }), want: ReasonNotYetStarted},
		{name: "Future", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.Timestamp = exampleTime.Add(time.Second) }), want: ReasonNotYetStarted},
		{name: "InsideLeeway", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.TTL = 59 }), want: ReasonValid},
		{name: "ExpiredAtLeewayEdge", receipt: bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.TTL = 58 }), want: ReasonExpired},
		{name: "BadSignature", receipt: tamperedSignature, want: ReasonBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, bundle.excuse.Check(tt.receipt))
		})
	}
}

func TestExcuseCheckAllDuplicates(t *testing.T) {
	t.Parallel()

	bundle := setupExcuse(t)
	valid := bundle.busyReceipt(bundle.other, nil)
	forged := bundle.busyReceipt(bundle.other, func(p *JobStarted) { p.JobUUID = "second" })
	forged.ValidatorSignature = valid.ValidatorSignature
	second := bundle.busyReceipt(bundle.keys.alice, func(p *JobStarted) { p.JobUUID = "second" })

	receipts := []Receipt{valid, valid, forged, second, bundle.busyReceipt(bundle.keys.alice, nil)}
	require.Equal(t, []Reason{ReasonValid, ReasonDuplicateJob, ReasonBadSignature, ReasonValid, ReasonDuplicateJob}, bundle.excuse.CheckAll(receipts))
	require.Equal(t, 2, bundle.excuse.CountValid(receipts))
}

func TestExcused(t *testing.T) {
	t.Parallel()

	tests := []struct {
		accepted, receipts, executors int
		want                          bool
	}{
		{accepted: 0, receipts: 0, executors: 1, want: false},
		{accepted: 0, receipts: 1, executors: 1, want: true},
		{accepted: 2, receipts: 1, executors: 3, want: true},
		{accepted: 1, receipts: 1, executors: 3, want: false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Excused(tt.accepted, tt.receipts, tt.executors), "%+v", tt)
	}
}
