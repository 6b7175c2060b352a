package batch

import (
	"encoding/json"
	"time"

	"drover.dev/services/batch-runner/internal/sysevent"
)

// Outcome is a job's outcome, as scorer counts it.
type Outcome string

// The outcomes.
const (
	OutcomeCompleted Outcome = "completed"
	OutcomeExcused   Outcome = "excused"
	OutcomeFailed    Outcome = "failed"
)

// Outcomes returns every outcome.
func Outcomes() []Outcome { return []Outcome{OutcomeCompleted, OutcomeExcused, OutcomeFailed} }

// Result is everything phase 3 writes. Run returns one even when it fails, so the events
// gathered so far are never lost.
type Result struct {
	Stages    []Stage
	Manifests []ManifestEntry
	Jobs      []JobResult
	Receipts  []SentReceipt
	Events    []sysevent.Event

	Pregenerated, PregeneratedUsed, ExtraGenerated int

	// HotRelease is when the gate opened; SendSpread is max(after-send) − min(before-send).
	HotRelease time.Time
	SendSpread time.Duration
}

// Stage is one stage's wall-clock span and the counts it ended with (see Progress.stageCounts).
type Stage struct {
	Name       string           `json:"name"`
	StartedAt  time.Time        `json:"started_at"`
	FinishedAt time.Time        `json:"finished_at"`
	Counts     map[string]int64 `json:"counts,omitempty"`
}

// ManifestEntry is one miner's executors of one class, as tested.
type ManifestEntry struct {
	Miner    string
	Class    string
	Declared int // what the manifest said
	Tested   int // after the class cap
}

// JobResult is one job's timings and verdict. Zero times mean "did not happen".
type JobResult struct {
	UUID, Miner, Class, Generator string

	Outcome Outcome
	Reason  Reason
	Score   float64
	Detail  string

	InitialSentAt, ResponseAt, ReadyAt time.Time
	BeforeSend, AfterSend, EndAt       time.Time
	// TimeTook is EndAt − BeforeSend, the send included, as upstream measures.
	TimeTook  time.Duration
	TimeLimit time.Duration
}

// SentReceipt is a receipt we signed and tried to deliver.
type SentReceipt struct {
	JobUUID   string
	Miner     string
	Type      string
	Payload   json.RawMessage
	Signature string
	SentAt    time.Time
	Error     string
}
