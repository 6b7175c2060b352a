package receipts

import (
	"encoding/json"

	"drover.dev/computehorde/internal/jsonwire"
)

// Receipt is a payload with both signatures, as a busy miner lists them in V0DeclineJobRequest
// to prove it is working for someone else.
type Receipt struct {
	Payload            Payload
	ValidatorSignature string
	MinerSignature     string
}

type receiptWire struct {
	Payload            json.RawMessage `json:"payload"`
	ValidatorSignature string          `json:"validator_signature"`
	MinerSignature     string          `json:"miner_signature"`
}

// MarshalJSON writes {payload, validator_signature, miner_signature}.
func (r Receipt) MarshalJSON() ([]byte, error) {
	payload, err := jsonwire.Marshal(r.Payload)
	if err != nil {
		return nil, err
	}
	return jsonwire.Marshal(receiptWire{
		Payload:            payload,
		ValidatorSignature: r.ValidatorSignature,
		MinerSignature:     r.MinerSignature,
	})
}

// UnmarshalJSON reads a receipt, choosing the payload type by its receipt_type. A payload of an
// unknown receipt_type is an error, as it is upstream.
func (r *Receipt) UnmarshalJSON(data []byte) error {
	o, err := jsonwire.ParseObject(data)
	if err != nil {
		return err
	}
	if err := o.Require("payload", "validator_signature", "miner_signature"); err != nil {
		return err
	}
	var w receiptWire
	if err := o.Decode(&w, ""); err != nil {
		return err
	}
	payload, err := decodeAnyPayload(w.Payload)
	if err != nil {
		return err
	}
	*r = Receipt{Payload: payload, ValidatorSignature: w.ValidatorSignature, MinerSignature: w.MinerSignature}
	return nil
}

// decodeAnyPayload reads a payload whose type its receipt_type names.
func decodeAnyPayload(data []byte) (Payload, error) {
	if err := jsonwire.Require(data, "receipt_type"); err != nil {
		return nil, err
	}
	tag, _, _ := jsonwire.Lookup(data, "receipt_type") // Require proved it present
	var payload interface {
		Payload
		json.Unmarshaler
	}
	switch string(tag) {
	case `"` + string(TypeJobStarted) + `"`:
		payload = new(JobStarted)
	case `"` + string(TypeJobAccepted) + `"`:
		payload = new(JobAccepted)
	case `"` + string(TypeJobFinished) + `"`:
		payload = new(JobFinished)
	default:
		return nil, &jsonwire.ValueError{Field: "receipt_type", Value: string(tag)}
	}
	if err := payload.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return payload, nil
}

// VerifyValidator checks the validator signature against the payload's validator_hotkey.
func (r Receipt) VerifyValidator() error {
	return Verify(r.Payload, r.Payload.ReceiptHeader().ValidatorHotkey, r.ValidatorSignature)
}

// VerifyMiner checks the miner signature against the payload's miner_hotkey.
func (r Receipt) VerifyMiner() error {
	return Verify(r.Payload, r.Payload.ReceiptHeader().MinerHotkey, r.MinerSignature)
}
