package receipts

import (
	"fmt"
	"math"
	"time"

	"drover.dev/computehorde/internal/jsonwire"
)

// JobFinished is the receipt a validator sends after scoring a job that got an answer.
type JobFinished struct {
	Header
	// TimeStarted is when the validator began sending V0JobRequest.
	TimeStarted time.Time
	// TimeTookUS is the job's duration in microseconds.
	TimeTookUS int64
	// ScoreStr is the score as FormatScore renders it.
	ScoreStr string
	// BlockNumbers is never nil on the wire: nil encodes as [].
	BlockNumbers []int64
}

// FormatScore renders a score as Python's "%.6g" does: 1 → "1", 0.5 → "0.5". Go's %g agrees
// with Python's for finite values; NaN and the infinities are spelled as Python spells them
// ("nan", "inf", "-inf") so that float(score_str) still reads them back on the miner.
func FormatScore(score float64) string {
	switch {
	case math.IsNaN(score):
		return "nan"
	case math.IsInf(score, 1):
		return "inf"
	case math.IsInf(score, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.6g", score)
}

// ReceiptType implements Payload.
func (*JobFinished) ReceiptType() Type { return TypeJobFinished }

// SignedBytes implements Payload.
func (p *JobFinished) SignedBytes() []byte {
	obj := p.signed(TypeJobFinished)
	obj["time_started"] = FormatTime(p.TimeStarted)
	obj["time_took_us"] = p.TimeTookUS
	obj["score_str"] = p.ScoreStr
	obj["block_numbers"] = p.blockNumbers()
	return appendPyJSON(nil, obj)
}

func (p *JobFinished) blockNumbers() []int64 {
	if p.BlockNumbers == nil {
		return []int64{}
	}
	return p.BlockNumbers
}

type jobFinishedWire struct {
	headerWire
	ReceiptType  Type    `json:"receipt_type"`
	TimeStarted  string  `json:"time_started"`
	TimeTookUS   int64   `json:"time_took_us"`
	ScoreStr     string  `json:"score_str"`
	BlockNumbers []int64 `json:"block_numbers"`
}

// MarshalJSON writes the payload in upstream's field order.
func (p JobFinished) MarshalJSON() ([]byte, error) {
	return jsonwire.Marshal(jobFinishedWire{
		headerWire:   p.wire(),
		ReceiptType:  TypeJobFinished,
		TimeStarted:  FormatTime(p.TimeStarted),
		TimeTookUS:   p.TimeTookUS,
		ScoreStr:     p.ScoreStr,
		BlockNumbers: p.blockNumbers(),
	})
}

// UnmarshalJSON reads the payload; block_numbers defaults to empty.
func (p *JobFinished) UnmarshalJSON(data []byte) error {
	var w jobFinishedWire
	if err := decodePayload(data, TypeJobFinished, &w, "time_started", "time_took_us", "score_str"); err != nil {
		return err
	}
	h, err := w.header()
	if err != nil {
		return err
	}
	started, err := parseField("time_started", w.TimeStarted)
	if err != nil {
		return err
	}
	*p = JobFinished{
		Header:       h,
		TimeStarted:  started,
		TimeTookUS:   w.TimeTookUS,
		ScoreStr:     w.ScoreStr,
		BlockNumbers: w.BlockNumbers,
	}
	return nil
}
