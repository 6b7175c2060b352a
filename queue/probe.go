package queue

import (
	"time"

	"github.com/riverqueue/river"
)

// QueueProbe is the queue probe jobs travel on, in every service's schema.
const QueueProbe = "probe"

// ProbeArgs asks the target service to record that a probe sent by Origin arrived. It proves the
// cross-service pattern end to end: the origin writes its probe row and inserts this job into the
// target's schema in one transaction.
type ProbeArgs struct {
	// ProbeID is the probe's id in the origin's probes table.
	ProbeID int64 `json:"probe_id"`

	// Origin is the service that sent the probe and waits for the acknowledgement.
	Origin Service `json:"origin"`

	// SentAt is when the origin committed the probe.
	SentAt time.Time `json:"sent_at"`
}

// Kind is the job kind of ProbeArgs.
func (ProbeArgs) Kind() string { return "probe" }

// InsertOpts pins ProbeArgs to QueueProbe.
func (ProbeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueProbe, MaxAttempts: 5}
}

// ProbeAckArgs tells the origin of a probe that Target received it at ArrivedAt.
type ProbeAckArgs struct {
	// ProbeID is the probe's id in the origin's probes table.
	ProbeID int64 `json:"probe_id"`

	// Target is the service that received the probe.
	Target Service `json:"target"`

	// ArrivedAt is when the target worked the probe job.
	ArrivedAt time.Time `json:"arrived_at"`
}

// Kind is the job kind of ProbeAckArgs.
func (ProbeAckArgs) Kind() string { return "probe_ack" }

// InsertOpts pins ProbeAckArgs to QueueProbe.
func (ProbeAckArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueProbe, MaxAttempts: 5}
}
