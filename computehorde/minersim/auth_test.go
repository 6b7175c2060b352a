package minersim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
)

func TestFleetAuthFailures(t *testing.T) {
	t.Parallel()

	key := func(uri string) *hotkey.Keypair {
		k, err := hotkey.FromURI(uri)
		require.NoError(t, err)
		return k
	}
	alice, rich, inactive, stranger, dust := key("//Alice"), key("//minersim-validator//rich"),
		key("//minersim-validator//inactive"), key("//Eve"), key("//Dave")
	validators := append(DefaultValidators(), Validator{URI: "//Dave", Stake: MinValidatorStake - 1})
	f := startFleet(t, Config{Miners: 2, Validators: validators})
	miner, other := f.Miners()[0], f.Miners()[1]

	notAuthenticated := func(k *hotkey.Keypair, reason string) string {
		return "Validator " + k.Address() + " not authenticated due to: " + reason
	}
	tests := []struct {
		name    string
		urlKey  string
		auth    func() *protocol.ValidatorAuthForMiner // nil: the miner refuses before any auth
		details string
	}{
		{"unknown validator", stranger.Address(), nil, "Unknown validator: " + stranger.Address()},
		{"inactive validator", inactive.Address(), nil, "Inactive validator: " + inactive.Address()},
		{"stake below 1000", dust.Address(), nil, "Inactive validator: " + dust.Address()},
		{"too old", alice.Address(), func() *protocol.ValidatorAuthForMiner {
			return protocol.NewValidatorAuth(alice, miner.Hotkey, time.Now().Add(-11*time.Second))
		}, notAuthenticated(alice, "auth message too old")},
		{"other miner", alice.Address(), func() *protocol.ValidatorAuthForMiner {
			return protocol.NewValidatorAuth(alice, other.Hotkey, time.Now())
		}, notAuthenticated(alice, "auth message is for another miner")},
		{"validator differs from url", rich.Address(), func() *protocol.ValidatorAuthForMiner {
			return protocol.NewValidatorAuth(alice, miner.Hotkey, time.Now())
		}, notAuthenticated(rich, "validator hotkey does not match the url")},
		{"bad signature", alice.Address(), func() *protocol.ValidatorAuthForMiner {
			auth := protocol.NewValidatorAuth(alice, miner.Hotkey, time.Now())
			auth.Signature = rich.Sign(auth.Blob())
			return auth
		}, notAuthenticated(alice, "invalid signature")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			v := dialMiner(t, miner, alice, tt.urlKey)
			if tt.auth != nil {
				v.send(tt.auth())
			}
			got := expect[*protocol.GenericError](v)
			require.NotNil(t, got.Details)
			require.Equal(t, tt.details, *got.Details)
			require.Equal(t, tt.auth == nil, protocol.IsUnauthorized(got), "only unknown/inactive read as unauthorized")
			v.requireClosed()
		})
	}
}

func TestFleetQueuesMessagesBeforeAuth(t *testing.T) {
	t.Parallel()

	f := startFleet(t, Config{})
	v := dialMiner(t, f.Miners()[0], aliceKey(t), aliceKey(t).Address())
	j := v.newJob(testClass)
	v.sendInitial(j) // before auth: the miner must queue it, then replay it after the manifest
	v.auth()
	expect[*protocol.V0ExecutorManifestRequest](v)
	require.Equal(t, j.uuid, expect[*protocol.V0AcceptJobRequest](v).JobUUID)
}

func TestFleetMalformedFrames(t *testing.T) {
	t.Parallel()

	f := startFleet(t, Config{})
	v := dialMiner(t, f.Miners()[0], aliceKey(t), aliceKey(t).Address())
	frames := []string{`{"message_type": "V0JobRequest", "job_uuid": `, `{"message_type":"NoSuchMessage"}`, `[1,2]`}
	for _, frame := range frames {
		v.sendRaw([]byte(frame))
		got := expect[*protocol.GenericError](v)
		require.NotNil(t, got.Details)
		require.Regexp(t, `^Malformed message: `, *got.Details)
	}
	v.auth()
	expect[*protocol.V0ExecutorManifestRequest](v)

	require.Equal(t, int64(len(frames)), f.Stats()[0].DecodeErrors)
	var failed int
	for _, a := range f.Arrivals() {
		if a.DecodeError != "" {
			failed++
		}
	}
	require.Equal(t, len(frames), failed)
}
