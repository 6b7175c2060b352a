package receipts

import (
	"time"

	"drover.dev/computehorde/internal/jsonwire"
)

// JobAccepted is the receipt a validator sends right after a miner accepts a job.
type JobAccepted struct {
	Header
	TimeAccepted time.Time
	// TTL is in seconds, AcceptedTTL for synthetic jobs.
	TTL int
}

// ReceiptType implements Payload.
func (*JobAccepted) ReceiptType() Type { return TypeJobAccepted }

// SignedBytes implements Payload.
func (p *JobAccepted) SignedBytes() []byte {
	obj := p.signed(TypeJobAccepted)
	obj["time_accepted"] = FormatTime(p.TimeAccepted)
	obj["ttl"] = p.TTL
	return appendPyJSON(nil, obj)
}

type jobAcceptedWire struct {
	headerWire
	ReceiptType  Type   `json:"receipt_type"`
	TimeAccepted string `json:"time_accepted"`
	TTL          int    `json:"ttl"`
}

// MarshalJSON writes the payload in upstream's field order.
func (p JobAccepted) MarshalJSON() ([]byte, error) {
	return jsonwire.Marshal(jobAcceptedWire{
		headerWire:   p.wire(),
		ReceiptType:  TypeJobAccepted,
		TimeAccepted: FormatTime(p.TimeAccepted),
		TTL:          p.TTL,
	})
}

// UnmarshalJSON reads the payload, insisting on every field.
func (p *JobAccepted) UnmarshalJSON(data []byte) error {
	var w jobAcceptedWire
	if err := decodePayload(data, TypeJobAccepted, &w, "time_accepted", "ttl"); err != nil {
		return err
	}
	h, err := w.header()
	if err != nil {
		return err
	}
	accepted, err := parseField("time_accepted", w.TimeAccepted)
	if err != nil {
		return err
	}
	*p = JobAccepted{Header: h, TimeAccepted: accepted, TTL: w.TTL}
	return nil
}
