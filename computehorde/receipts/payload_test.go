package receipts

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/internal/jsonwire"
)

var (
	exampleTime     = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)
	exampleTimeZero = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

// payloadCases pair payloads with the bytes json.dumps(payload, sort_keys=True) gives and with
// their compact wire form. The first is upstream ComputeHorde's example blob.
var payloadCases = []struct {
	name    string
	payload Payload
	signed  string
	wire    string
}{
	{
		name: "JobStartedReference",
		payload: &JobStarted{
			Header:        Header{JobUUID: "7b9e…", MinerHotkey: "5Fmin…", ValidatorHotkey: "5Fvali…", Timestamp: exampleTime},
			ExecutorClass: "spin_up-4min.gpu-24gb",
			TTL:           298,
		},
		signed: `{"executor_class": "spin_up-4min.gpu-24gb", "is_organic": false, "job_uuid": "7b9e\u2026", "miner_hotkey": "5Fmin\u2026", "receipt_type": "JobStartedReceipt", "timestamp": "2025-03-01T12:00:00.123456Z", "ttl": 298, "validator_hotkey": "5Fvali\u2026"}`,
		wire:   `{"job_uuid":"7b9e…","miner_hotkey":"5Fmin…","validator_hotkey":"5Fvali…","timestamp":"2025-03-01T12:00:00.123456Z","receipt_type":"JobStartedReceipt","executor_class":"spin_up-4min.gpu-24gb","is_organic":false,"ttl":298}`,
	},
	{
		name: "JobStartedZeroMicrosAstral",
		payload: &JobStarted{
			Header:        Header{JobUUID: "j-🚀", MinerHotkey: "5Fmin", ValidatorHotkey: "5Fvali", Timestamp: exampleTimeZero},
			ExecutorClass: "always_on.llm.a6000",
			IsOrganic:     true,
			TTL:           61,
		},
		signed: `{"executor_class": "always_on.llm.a6000", "is_organic": true, "job_uuid": "j-\ud83d\ude80", "miner_hotkey": "5Fmin", "receipt_type": "JobStartedReceipt", "timestamp": "2025-03-01T12:00:00Z", "ttl": 61, "validator_hotkey": "5Fvali"}`,
		wire:   `{"job_uuid":"j-🚀","miner_hotkey":"5Fmin","validator_hotkey":"5Fvali","timestamp":"2025-03-01T12:00:00Z","receipt_type":"JobStartedReceipt","executor_class":"always_on.llm.a6000","is_organic":true,"ttl":61}`,
	},
	{
		name: "JobAccepted",
		payload: &JobAccepted{
			Header:       Header{JobUUID: "u1", MinerHotkey: "5Fmin", ValidatorHotkey: "5Fvali", Timestamp: exampleTime},
			TimeAccepted: exampleTimeZero,
			TTL:          AcceptedTTL,
		},
		signed: `{"job_uuid": "u1", "miner_hotkey": "5Fmin", "receipt_type": "JobAcceptedReceipt", "time_accepted": "2025-03-01T12:00:00Z", "timestamp": "2025-03-01T12:00:00.123456Z", "ttl": 360, "validator_hotkey": "5Fvali"}`,
		wire:   `{"job_uuid":"u1","miner_hotkey":"5Fmin","validator_hotkey":"5Fvali","timestamp":"2025-03-01T12:00:00.123456Z","receipt_type":"JobAcceptedReceipt","time_accepted":"2025-03-01T12:00:00Z","ttl":360}`,
	},
	{
		name: "JobFinished",
		payload: &JobFinished{
			Header:      Header{JobUUID: "u1", MinerHotkey: "5Fmin", ValidatorHotkey: "Válidátor", Timestamp: exampleTime},
			TimeStarted: exampleTime,
			TimeTookUS:  12_500_000,
			ScoreStr:    FormatScore(1),
		},
		signed: `{"block_numbers": [], "job_uuid": "u1", "miner_hotkey": "5Fmin", "receipt_type": "JobFinishedReceipt", "score_str": "1", "time_started": "2025-03-01T12:00:00.123456Z", "time_took_us": 12500000, "timestamp": "2025-03-01T12:00:00.123456Z", "validator_hotkey": "V\u00e1lid\u00e1tor"}`,
		wire:   `{"job_uuid":"u1","miner_hotkey":"5Fmin","validator_hotkey":"Válidátor","timestamp":"2025-03-01T12:00:00.123456Z","receipt_type":"JobFinishedReceipt","time_started":"2025-03-01T12:00:00.123456Z","time_took_us":12500000,"score_str":"1","block_numbers":[]}`,
	},
}

func TestPayloadSignedBytes(t *testing.T) {
	t.Parallel()

	for _, tt := range payloadCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.signed, string(tt.payload.SignedBytes()))
		})
	}
}

// TestPayloadSignedBytesAgainstPython rebuilds the signed bytes from the wire form in Python,
// as a miner does, and compares them with ours.
func TestPayloadSignedBytesAgainstPython(t *testing.T) {
	t.Parallel()

	var inputs, wants []string
	for _, tt := range payloadCases {
		inputs = append(inputs, tt.wire)
		wants = append(wants, string(tt.payload.SignedBytes()))
	}
	got := runPython(t, `
import json, sys
for wire in json.load(sys.stdin):
    print(json.dumps(json.loads(wire), sort_keys=True))
`, inputs)
	require.Equal(t, wants, got)
}

func TestPayloadWireRoundTrip(t *testing.T) {
	t.Parallel()

	for _, tt := range payloadCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			wire, err := json.Marshal(tt.payload)
			require.NoError(t, err)
			require.Equal(t, tt.wire, string(wire))

			decoded, err := decodeAnyPayload([]byte(tt.wire))
			require.NoError(t, err)
			require.Equal(t, tt.payload.SignedBytes(), decoded.SignedBytes())
			again, err := json.Marshal(decoded)
			require.NoError(t, err)
			require.Equal(t, tt.wire, string(again))
		})
	}
}

// TestPayloadDecodeMatchesKeysExactly appends keys that differ from the payload's only in case:
// pydantic ignores them, where encoding/json alone would let them overwrite the exact ones.
func TestPayloadDecodeMatchesKeysExactly(t *testing.T) {
	t.Parallel()

	const strays = `,"JOB_UUID":"evil","Timestamp":"2000-01-01T00:00:00Z","TTL":1,"Score_Str":"0","Receipt_Type":"x"}`
	for _, tt := range payloadCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			decoded, err := decodeAnyPayload([]byte(strings.TrimSuffix(tt.wire, "}") + strays))
			require.NoError(t, err)
			require.Equal(t, string(tt.payload.SignedBytes()), string(decoded.SignedBytes()))
		})
	}
}

func TestPayloadDecodeErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		payload Payload
		data    string
		field   string
		missing bool
		value   bool
	}{
		{name: "MissingTTL", payload: new(JobStarted), data: `{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","executor_class":"c","is_organic":true}`, field: "ttl", missing: true},
		{name: "TTLInWrongCaseOnly", payload: new(JobStarted), data: `{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","executor_class":"c","is_organic":true,"TTL":1}`, field: "ttl", missing: true},
		{name: "NullJobUUID", payload: new(JobAccepted), data: `{"job_uuid":null,"miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","time_accepted":"2025-03-01T12:00:00Z","ttl":1}`, field: "job_uuid"},
		{name: "WrongReceiptType", payload: new(JobStarted), data: `{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","receipt_type":"JobAcceptedReceipt","executor_class":"c","is_organic":true,"ttl":1}`, field: "receipt_type", value: true},
		{name: "BadTimestamp", payload: new(JobFinished), data: `{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"yesterday","time_started":"2025-03-01T12:00:00Z","time_took_us":1,"score_str":"1"}`, field: "timestamp", value: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := json.Unmarshal([]byte(tt.data), tt.payload)
			if tt.value {
				var valueErr *jsonwire.ValueError
				require.ErrorAs(t, err, &valueErr)
				require.Equal(t, tt.field, valueErr.Field)
				return
			}
			var fieldErr *jsonwire.FieldError
			require.ErrorAs(t, err, &fieldErr)
			require.Equal(t, tt.field, fieldErr.Field)
			require.Equal(t, tt.missing, fieldErr.Missing)
		})
	}
}

func TestStartedTTL(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		spinUp  time.Duration
		timeout time.Duration
		want    int
	}{
		{name: "FourMinuteClass", spinUp: 240 * time.Second, timeout: 53 * time.Second, want: 298},
		{name: "AlwaysOn", spinUp: 3 * time.Second, timeout: 53 * time.Second, want: 61},
		{name: "SpinUpBelowTwo", spinUp: 0, timeout: 53 * time.Second, want: 60},
		{name: "PartialSecondsRoundUp", spinUp: 2500 * time.Millisecond, timeout: 10 * time.Second, want: 18},
		{name: "ClampedHigh", spinUp: 240 * time.Second, timeout: 120 * time.Second, want: 300},
		{name: "ClampedLow", spinUp: 0, timeout: -10 * time.Second, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, StartedTTL(tt.spinUp, tt.timeout))
		})
	}
}

func TestFormatScore(t *testing.T) {
	t.Parallel()

	// Expected strings are Python's "%.6g" % score for each value.
	tests := []struct {
		score float64
		want  string
	}{
		{1, "1"}, {0, "0"}, {0.5, "0.5"}, {1.0 / 3, "0.333333"}, {1234567, "1.23457e+06"}, {1e-7, "1e-07"},
		{123456789, "1.23457e+08"}, {2.5e-5, "2.5e-05"}, {100000, "100000"}, {1e16, "1e+16"}, {math.Copysign(0, -1), "-0"},
		{math.NaN(), "nan"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, FormatScore(tt.score), "score %v", tt.score)
	}
}
