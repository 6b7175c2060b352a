package receipts

import (
	"math"
	"time"

	"drover.dev/computehorde/internal/jsonwire"
)

// AcceptedTTL is the ttl, in seconds, of JobAccepted receipts.
const AcceptedTTL = 360

// JobStarted is the receipt a validator puts in V0InitialJobRequest: it promises the miner a
// job of ExecutorClass for TTL seconds from Timestamp. Another validator's organic JobStarted
// receipt is what excuses a miner for being busy.
type JobStarted struct {
	Header
	ExecutorClass string
	IsOrganic     bool
	// TTL is in seconds; StartedTTL computes it for synthetic jobs.
	TTL int
}

// StartedTTL is the ttl of a synthetic job's JobStarted receipt, in seconds:
// clamp(max(spin-up, 2) + job timeout + 5, 5, 300), partial seconds rounded up.
func StartedTTL(spinUp, jobTimeout time.Duration) int {
	ttl := max(ceilSeconds(spinUp), 2) + ceilSeconds(jobTimeout) + 5
	return min(max(ttl, 5), 300)
}

func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// ReceiptType implements Payload.
func (*JobStarted) ReceiptType() Type { return TypeJobStarted }

// SignedBytes implements Payload.
func (p *JobStarted) SignedBytes() []byte {
	obj := p.signed(TypeJobStarted)
	obj["executor_class"] = p.ExecutorClass
	obj["is_organic"] = p.IsOrganic
	obj["ttl"] = p.TTL
	return appendPyJSON(nil, obj)
}

type jobStartedWire struct {
	headerWire
	ReceiptType   Type   `json:"receipt_type"`
	ExecutorClass string `json:"executor_class"`
	IsOrganic     bool   `json:"is_organic"`
	TTL           int    `json:"ttl"`
}

// MarshalJSON writes the payload in upstream's field order.
func (p JobStarted) MarshalJSON() ([]byte, error) {
	return jsonwire.Marshal(jobStartedWire{
		headerWire:    p.wire(),
		ReceiptType:   TypeJobStarted,
		ExecutorClass: p.ExecutorClass,
		IsOrganic:     p.IsOrganic,
		TTL:           p.TTL,
	})
}

// UnmarshalJSON reads the payload, insisting on every field.
func (p *JobStarted) UnmarshalJSON(data []byte) error {
	var w jobStartedWire
	if err := decodePayload(data, TypeJobStarted, &w, "executor_class", "is_organic", "ttl"); err != nil {
		return err
	}
	h, err := w.header()
	if err != nil {
		return err
	}
	*p = JobStarted{Header: h, ExecutorClass: w.ExecutorClass, IsOrganic: w.IsOrganic, TTL: w.TTL}
	return nil
}
