package minersim

import (
	"slices"
	"sync"
)

// Arrival records one frame a miner received from a validator. UnixNano is when the frame's last
// byte reached this machine: on Linux the kernel's receive timestamp of the socket read that
// brought it (SO_TIMESTAMPNS), elsewhere the instant that read returned, before decoding either
// way. Comparing arrivals of the same message type across miners therefore measures how fairly
// the validator sent them, not how the miners' readers were scheduled.
type Arrival struct {
	Miner       int    `json:"miner"`
	MinerHotkey string `json:"miner_hotkey"`
	Validator   string `json:"validator"`
	// Executor is "<class>/<slot>" for messages about a job that got a slot, else empty.
	Executor    string `json:"executor,omitempty"`
	JobUUID     string `json:"job_uuid,omitempty"`
	MessageType string `json:"message_type"`
	UnixNano    int64  `json:"unix_nano"`
	Bytes       int    `json:"bytes"`
	// DecodeError is set when protocol.DecodeFromValidator refused the frame.
	DecodeError string `json:"decode_error,omitempty"`
	// Frame is the frame verbatim, kept only with Config.KeepFrames.
	Frame string `json:"frame,omitempty"`
}

// recorder keeps arrivals in order. One mutex is enough: appends are a few nanoseconds and
// happen once per received frame.
type recorder struct {
	mu       sync.Mutex
	arrivals []Arrival
}

func (r *recorder) add(a Arrival) {
	r.mu.Lock()
	r.arrivals = append(r.arrivals, a)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []Arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.arrivals)
}

// Arrivals returns every frame received so far, in the order they were recorded.
func (f *Fleet) Arrivals() []Arrival { return f.recorder.snapshot() }

// ArrivalFilter selects arrivals; zero fields match everything.
type ArrivalFilter struct {
	Miner       *int
	MessageType string
	JobUUID     string
	SinceNano   int64
}

// Match reports whether a passes the filter.
func (q ArrivalFilter) Match(a Arrival) bool {
	return (q.Miner == nil || *q.Miner == a.Miner) &&
		(q.MessageType == "" || q.MessageType == a.MessageType) &&
		(q.JobUUID == "" || q.JobUUID == a.JobUUID) &&
		a.UnixNano >= q.SinceNano
}

// ArrivalsWhere returns the arrivals passing q.
func (f *Fleet) ArrivalsWhere(q ArrivalFilter) []Arrival {
	all := f.Arrivals()
	return slices.DeleteFunc(all, func(a Arrival) bool { return !q.Match(a) })
}
