package receipts

import (
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/internal/jsonwire"
)

// Type is the receipt_type discriminator of a payload.
type Type string

// The receipt types.
const (
	TypeJobStarted  Type = "JobStartedReceipt"
	TypeJobAccepted Type = "JobAcceptedReceipt"
	TypeJobFinished Type = "JobFinishedReceipt"
)

// Payload is one of *JobStarted, *JobAccepted and *JobFinished.
type Payload interface {
	// ReceiptType returns the payload's receipt_type.
	ReceiptType() Type
	// ReceiptHeader returns the fields every payload carries.
	ReceiptHeader() Header
	// SignedBytes returns what the validator signs: json.dumps(payload, sort_keys=True).
	SignedBytes() []byte
}

// Header holds the fields every receipt payload starts with.
type Header struct {
	JobUUID         string
	MinerHotkey     string
	ValidatorHotkey string
	// Timestamp is when the receipt was made; keep it in UTC, as upstream does.
	Timestamp time.Time
}

// ReceiptHeader implements Payload for the payloads that embed Header.
func (h Header) ReceiptHeader() Header { return h }

// headerWire is Header on the wire; the payload wire structs embed it so its fields come first.
type headerWire struct {
	JobUUID         string `json:"job_uuid"`
	MinerHotkey     string `json:"miner_hotkey"`
	ValidatorHotkey string `json:"validator_hotkey"`
	Timestamp       string `json:"timestamp"`
}

// headerFields are the payload fields a decoder insists on.
var headerFields = []string{"job_uuid", "miner_hotkey", "validator_hotkey", "timestamp"}

func (h Header) wire() headerWire {
	return headerWire{
		JobUUID:         h.JobUUID,
		MinerHotkey:     h.MinerHotkey,
		ValidatorHotkey: h.ValidatorHotkey,
		Timestamp:       FormatTime(h.Timestamp),
	}
}

func (w headerWire) header() (Header, error) {
	ts, err := parseField("timestamp", w.Timestamp)
	if err != nil {
		return Header{}, err
	}
	return Header{JobUUID: w.JobUUID, MinerHotkey: w.MinerHotkey, ValidatorHotkey: w.ValidatorHotkey, Timestamp: ts}, nil
}

// parseField parses a timestamp field, reporting a bad one as a *jsonwire.ValueError.
func parseField(name, value string) (time.Time, error) {
	t, err := ParseTime(value)
	if err != nil {
		return time.Time{}, &jsonwire.ValueError{Field: name, Value: value}
	}
	return t, nil
}

// signed returns the header as Python objects plus receipt_type, ready for the payload's own
// fields.
func (h Header) signed(t Type) pyObject {
	return pyObject{
		"job_uuid":         h.JobUUID,
		"miner_hotkey":     h.MinerHotkey,
		"validator_hotkey": h.ValidatorHotkey,
		"timestamp":        FormatTime(h.Timestamp),
		"receipt_type":     string(t),
	}
}

// decodePayload unmarshals data into wire after checking the header and the given fields are
// present and that receipt_type, when present, is want.
func decodePayload(data []byte, want Type, wire any, fields ...string) error {
	o, err := jsonwire.ParseObject(data)
	if err != nil {
		return err
	}
	if err := o.Require(append(fields, headerFields...)...); err != nil {
		return err
	}
	tag, ok := o.Lookup("receipt_type")
	if ok && !jsonwire.IsNull(tag) && string(tag) != `"`+string(want)+`"` {
		return &jsonwire.ValueError{Field: "receipt_type", Value: string(tag)}
	}
	return o.Decode(wire, "")
}

// Sign signs a payload with the validator's key and returns the "0x…" signature.
func Sign(p Payload, key *hotkey.Keypair) string {
	return key.Sign(p.SignedBytes())
}

// Verify checks signature over p's signed bytes by the holder of the SS58 address signer.
func Verify(p Payload, signer, signature string) error {
	return hotkey.Verify(signer, p.SignedBytes(), signature)
}
