// Package sysevent buffers a batch's system events in memory, bounded per type and subtype, so
// the timing-critical stages never touch the database and a misbehaving miner cannot flood the
// table: the first Limit events of a limited kind are kept, the rest only counted, and the count
// itself becomes an event when the buffer is drained.
package sysevent

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// The event types and subtypes upstream validators record; Drover keeps the names so operators
// can compare.
const (
	TypeJobFailure       = "MINER_SYNTHETIC_JOB_FAILURE"
	TypeJobSuccess       = "MINER_SYNTHETIC_JOB_SUCCESS"
	TypeExecutorClipped  = "MINER_EXECUTOR_COUNT_CLIPPED"
	TypeReceiptFailure   = "RECEIPT_FAILURE"
	TypeTelemetry        = "VALIDATOR_TELEMETRY"
	TypeValidatorFailure = "VALIDATOR_FAILURE"
	// TypeProtocol records frames that change nothing: duplicates, unknown job_uuids, late
	// answers and malformed frames.
	TypeProtocol = "MINER_PROTOCOL_EVENT"
)

// Subtypes used with the types above.
const (
	Unauthorized         = "UNAUTHORIZED"
	GenericError         = "GENERIC_ERROR"
	MinerSendError       = "MINER_SEND_ERROR"
	MinerConnectionError = "MINER_CONNECTION_ERROR"
	ManifestTimeout      = "MANIFEST_TIMEOUT"
	ManifestError        = "MANIFEST_ERROR"
	JobExecutionTimeout  = "JOB_EXECUTION_TIMEOUT"
	JobExcused           = "JOB_EXCUSED"
	JobRejected          = "JOB_REJECTED"
	JobNotStarted        = "JOB_NOT_STARTED"
	HordeFailed          = "HORDE_FAILED"
	Failure              = "FAILURE"
	Success              = "SUCCESS"
	Warning              = "WARNING"
	ReceiptSendError     = "RECEIPT_SEND_ERROR"
	SlowSend             = "SLOW_SEND"
	SyntheticBatch       = "SYNTHETIC_BATCH"
	Duplicate            = "DUPLICATE_MESSAGE"
	UnknownJob           = "UNKNOWN_JOB_UUID"
	LateMessage          = "LATE_MESSAGE"
	MalformedFrame       = "MALFORMED_FRAME"
	Panic                = "PANIC"
	Dropped              = "EVENTS_DROPPED"
	// ShardNotReady: the send instant of a sharded batch was fixed without these shards, which
	// were not ready within the wait. ShardLate: this shard was ready only after the instant.
	ShardNotReady = "SHARD_NOT_READY"
	ShardLate     = "SHARD_LATE"
)

// Event is one system event. Data is a JSON object with the ids involved.
type Event struct {
	Type        string          `json:"type"`
	Subtype     string          `json:"subtype"`
	Description string          `json:"description"`
	At          time.Time       `json:"at"`
	Data        json.RawMessage `json:"data"`
}

// Kind is a type and subtype pair, the unit limits apply to.
type Kind struct{ Type, Subtype string }

// DefaultLimits bounds the kinds a single miner can produce in numbers: per-job failures and
// protocol noise. Kinds not listed are unbounded (one per batch or per miner at most).
func DefaultLimits() map[Kind]int {
	limits := map[Kind]int{}
	for _, sub := range []string{JobExecutionTimeout, JobRejected, JobNotStarted, Failure, HordeFailed, MinerSendError, JobExcused} {
		limits[Kind{TypeJobFailure, sub}] = 10
	}
	for _, sub := range []string{Duplicate, UnknownJob, LateMessage, MalformedFrame} {
		limits[Kind{TypeProtocol, sub}] = 10
	}
	limits[Kind{TypeJobSuccess, Success}] = 10
	limits[Kind{TypeReceiptFailure, ReceiptSendError}] = 10
	limits[Kind{TypeTelemetry, SlowSend}] = 10
	return limits
}

// Recorder collects events. It is safe for concurrent use; the zero value is not, use New.
type Recorder struct {
	mu     sync.Mutex
	limits map[Kind]int
	counts map[Kind]int
	events []Event
	now    func() time.Time
}

// New returns a recorder with the given per-kind limits (nil: DefaultLimits).
func New(limits map[Kind]int) *Recorder {
	if limits == nil {
		limits = DefaultLimits()
	}
	return &Recorder{limits: limits, counts: map[Kind]int{}, now: time.Now}
}

// Add records an event of the kind, with data marshalled to JSON (nil for none).
func (r *Recorder) Add(typ, subtype, description string, data any) {
	raw := json.RawMessage(`{}`)
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			raw = b
		} else {
			raw, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := Kind{typ, subtype}
	r.counts[k]++
	if limit, ok := r.limits[k]; ok && r.counts[k] > limit {
		return
	}
	r.events = append(r.events, Event{Type: typ, Subtype: subtype, Description: description, At: r.now(), Data: raw})
}

// Addf records an event with a formatted description and no data.
func (r *Recorder) Addf(typ, subtype, format string, args ...any) {
	r.Add(typ, subtype, fmt.Sprintf(format, args...), nil)
}

// Drain returns the kept events, followed by one EVENTS_DROPPED event per kind that went over
// its limit, and empties the recorder. Events added after a drain are kept for the next one.
func (r *Recorder) Drain() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	for k, n := range r.counts {
		if limit, ok := r.limits[k]; ok && n > limit {
			data, _ := json.Marshal(map[string]any{"type": k.Type, "subtype": k.Subtype, "recorded": n, "kept": limit})
			out = append(out, Event{
				Type: TypeValidatorFailure, Subtype: Dropped, At: r.now(), Data: data,
				Description: fmt.Sprintf("%d %s/%s events, %d kept", n, k.Type, k.Subtype, limit),
			})
		}
	}
	r.events, r.counts = nil, map[Kind]int{}
	return out
}

// Len is the number of events kept so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}
