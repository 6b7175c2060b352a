package receipts

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/internal/jsonwire"
)

type testKeys struct {
	alice *hotkey.Keypair // validator
	bob   *hotkey.Keypair // miner
}

func newTestKeys(t *testing.T) testKeys {
	t.Helper()

	alice, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	bob, err := hotkey.FromURI("//Bob")
	require.NoError(t, err)
	return testKeys{alice: alice, bob: bob}
}

func TestReceiptSignAndVerify(t *testing.T) {
	t.Parallel()

	keys := newTestKeys(t)
	payload := &JobStarted{
		Header:        Header{JobUUID: "u1", MinerHotkey: keys.bob.Address(), ValidatorHotkey: keys.alice.Address(), Timestamp: exampleTime},
		ExecutorClass: "spin_up-4min.gpu-24gb",
		IsOrganic:     true,
		TTL:           298,
	}
	receipt := Receipt{Payload: payload, ValidatorSignature: Sign(payload, keys.alice), MinerSignature: Sign(payload, keys.bob)}
	require.NoError(t, receipt.VerifyValidator())
	require.NoError(t, receipt.VerifyMiner())

	swapped := Receipt{Payload: payload, ValidatorSignature: receipt.MinerSignature, MinerSignature: receipt.ValidatorSignature}
	require.ErrorIs(t, swapped.VerifyValidator(), hotkey.ErrBadSignature)
	require.ErrorIs(t, swapped.VerifyMiner(), hotkey.ErrBadSignature)

	// A receipt survives the trip through the wire: the parsed copy signs the same bytes.
	wire, err := json.Marshal(receipt)
	require.NoError(t, err)
	var decoded Receipt
	require.NoError(t, json.Unmarshal(wire, &decoded))
	require.NoError(t, decoded.VerifyValidator())
	require.NoError(t, decoded.VerifyMiner())

	payload.TTL = 300
	require.ErrorIs(t, receipt.VerifyValidator(), hotkey.ErrBadSignature)
}

func TestReceiptUnmarshalErrors(t *testing.T) {
	t.Parallel()

	payload := `{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","receipt_type":"%s","time_accepted":"2025-03-01T12:00:00Z","ttl":1}`
	tests := []struct {
		name  string
		data  string
		field string
	}{
		{name: "UnknownReceiptType", data: `{"payload":` + fmt.Sprintf(payload, "OtherReceipt") + `,"validator_signature":"0x","miner_signature":"0x"}`, field: "receipt_type"},
		{name: "MissingMinerSignature", data: `{"payload":` + fmt.Sprintf(payload, "JobAcceptedReceipt") + `,"validator_signature":"0x"}`, field: "miner_signature"},
		{name: "MissingReceiptType", data: `{"payload":{"job_uuid":"u"},"validator_signature":"0x","miner_signature":"0x"}`, field: "receipt_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var r Receipt
			err := json.Unmarshal([]byte(tt.data), &r)
			var valueErr *jsonwire.ValueError
			var fieldErr *jsonwire.FieldError
			switch {
			case errors.As(err, &valueErr):
				require.Equal(t, tt.field, valueErr.Field)
			case errors.As(err, &fieldErr):
				require.Equal(t, tt.field, fieldErr.Field)
			default:
				require.Fail(t, "unexpected error", "%v", err)
			}
		})
	}
}
