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

// Type is an event's type. The types and subtypes are the ones upstream validators record;
// Drover keeps the names so operators can compare.
type Type string

// Subtype refines an event's type.
type Subtype string

// The event types.
const (
	TypeJobFailure       Type = "MINER_SYNTHETIC_JOB_FAILURE"
	TypeJobSuccess       Type = "MINER_SYNTHETIC_JOB_SUCCESS"
	TypeExecutorClipped  Type = "MINER_EXECUTOR_COUNT_CLIPPED"
	TypeReceiptFailure   Type = "RECEIPT_FAILURE"
	TypeTelemetry        Type = "VALIDATOR_TELEMETRY"
	TypeValidatorFailure Type = "VALIDATOR_FAILURE"
	// TypeProtocol records frames that change nothing: duplicates, unknown job_uuids, late
	// answers and malformed frames.
	TypeProtocol Type = "MINER_PROTOCOL_EVENT"
	// TypeRiverJob records what befell the River job of a batch or a shard besides its work: it
	// ended for good with the batch failed, or an operator pressed a River UI button on it. A
	// run_batch job delivered again after an attempt whose TypeRiverJob event ended it
	// (JobDiscarded, JobCancelled) can only have been retried by hand.
	TypeRiverJob Type = "RIVER_JOB"
)

// The event subtypes, used with the types above.
const (
	Unauthorized         Subtype = "UNAUTHORIZED"
	GenericError         Subtype = "GENERIC_ERROR"
	MinerSendError       Subtype = "MINER_SEND_ERROR"
	MinerConnectionError Subtype = "MINER_CONNECTION_ERROR"
	ManifestTimeout      Subtype = "MANIFEST_TIMEOUT"
	ManifestError        Subtype = "MANIFEST_ERROR"
	JobExecutionTimeout  Subtype = "JOB_EXECUTION_TIMEOUT"
	JobExcused           Subtype = "JOB_EXCUSED"
	JobRejected          Subtype = "JOB_REJECTED"
	JobNotStarted        Subtype = "JOB_NOT_STARTED"
	HordeFailed          Subtype = "HORDE_FAILED"
	Failure              Subtype = "FAILURE"
	Success              Subtype = "SUCCESS"
	Warning              Subtype = "WARNING"
	ReceiptSendError     Subtype = "RECEIPT_SEND_ERROR"
	SlowSend             Subtype = "SLOW_SEND"
	SyntheticBatch       Subtype = "SYNTHETIC_BATCH"
	Duplicate            Subtype = "DUPLICATE_MESSAGE"
	UnknownJob           Subtype = "UNKNOWN_JOB_UUID"
	LateMessage          Subtype = "LATE_MESSAGE"
	MalformedFrame       Subtype = "MALFORMED_FRAME"
	Panic                Subtype = "PANIC"
	Dropped              Subtype = "EVENTS_DROPPED"
	// ShardNotReady: the send instant of a sharded batch was fixed without these shards, which
	// were not ready within the wait. ShardLate: this shard was ready only after the instant.
	ShardNotReady Subtype = "SHARD_NOT_READY"
	ShardLate     Subtype = "SHARD_LATE"
	// NoSuitableGenerator: an executor class has no job it can run (a GPU job, and no GPU), so
	// its executors are not tested.
	NoSuitableGenerator Subtype = "NO_SUITABLE_GENERATOR"

	// Subtypes of TypeRiverJob. JobDiscarded: the job ended failed for good with its batch.
	// JobCancelled: River UI's Cancel stopped the running job, and its batch or shard failed with
	// it. JobRetried: River UI's Retry ran a failed batch again. RetryRefused: River UI's Retry
	// delivered a job whose batch or shard had already ended; nothing ran and the job ended
	// cancelled. LeaseExpired: the attempt's lease ran out unrenewed (its process died, or lost
	// the database for a whole lease) and a replica handed the batch or shard to a new River job.
	JobDiscarded Subtype = "JOB_DISCARDED"
	JobCancelled Subtype = "JOB_CANCELLED"
	JobRetried   Subtype = "JOB_RETRIED"
	RetryRefused Subtype = "RETRY_REFUSED"
	LeaseExpired Subtype = "LEASE_EXPIRED"
)

// Event is one system event. Data is a JSON object with the ids involved.
type Event struct {
	Type        Type            `json:"type"`
	Subtype     Subtype         `json:"subtype"`
	Description string          `json:"description"`
	At          time.Time       `json:"at"`
	Data        json.RawMessage `json:"data"`
}

// Kind is a type and subtype pair, the unit limits apply to.
type Kind struct {
	Type    Type
	Subtype Subtype
}

// DefaultLimits bounds the kinds a single miner can produce in numbers: per-job failures and
// protocol noise. Kinds not listed are unbounded (one per batch or per miner at most).
func DefaultLimits() map[Kind]int {
	limits := map[Kind]int{}
	for _, sub := range []Subtype{JobExecutionTimeout, JobRejected, JobNotStarted, Failure, HordeFailed, MinerSendError, JobExcused} {
		limits[Kind{TypeJobFailure, sub}] = 10
	}
	for _, sub := range []Subtype{Duplicate, UnknownJob, LateMessage, MalformedFrame} {
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
func (r *Recorder) Add(typ Type, subtype Subtype, description string, data any) {
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

// One returns a single event of the kind at now, for a caller that writes it at once rather
// than through a Recorder.
func One(typ Type, subtype Subtype, description string, data any) Event {
	r := New(map[Kind]int{})
	r.Add(typ, subtype, description, data)
	return r.Drain()[0]
}

// Addf records an event with a formatted description and no data.
func (r *Recorder) Addf(typ Type, subtype Subtype, format string, args ...any) {
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
