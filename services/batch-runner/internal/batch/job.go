package batch

import (
	"time"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/computehorde/synthetic"
)

// slotKind is one question a miner answers once per job: will you take it (accept or decline),
// is the executor up (ready or failed), how did it go (finished or failed).
type slotKind int

const (
	slotResponse slotKind = iota
	slotReadiness
	slotAnswer
	slotCount
)

func (k slotKind) String() string {
	return [...]string{"response", "readiness", "answer"}[k]
}

// slot holds the first answer to one question. It is filled at most once and sealed when the
// stage that waits for it ends; what arrives after either is an event, never a change.
type slot struct {
	at     time.Time
	msg    protocol.Message
	filled chan struct{}
	sealed bool
}

// job is one synthetic job's state. Its mutable fields are guarded by its miner's mutex, except
// the timings written by the stage goroutine that owns the job at that moment.
type job struct {
	uuid  string
	miner *miner
	class string
	spec  synthetic.Job

	started    receipts.JobStarted
	startedSig string

	slots [slotCount]slot

	initialSentAt         time.Time
	beforeSend, afterSend time.Time
	sendErr               error
	sent                  bool
}

func newJob(uuid string, m *miner, class string, spec synthetic.Job) *job {
	j := &job{uuid: uuid, miner: m, class: class, spec: spec}
	for i := range j.slots {
		j.slots[i].filled = make(chan struct{})
	}
	return j
}

// slotFor says which question msg answers. A horde failure answers readiness until the job
// request is sent, and the job's outcome after.
func (j *job) slotFor(msg protocol.Message) (slotKind, bool) {
	switch msg.(type) {
	case *protocol.V0AcceptJobRequest, *protocol.V0DeclineJobRequest:
		return slotResponse, true
	case *protocol.V0ExecutorReadyRequest, *protocol.V0StreamingJobReadyRequest,
		*protocol.V0ExecutorFailedRequest, *protocol.V0StreamingJobNotReadyRequest:
		return slotReadiness, true
	case *protocol.V0HordeFailedRequest:
		if j.sent {
			return slotAnswer, true
		}
		return slotReadiness, true
	case *protocol.V0JobFinishedRequest, *protocol.V0JobFailedRequest:
		return slotAnswer, true
	}
	return 0, false
}

// fillResult says what happened to a message offered to a slot.
type fillResult int

const (
	filled fillResult = iota
	duplicate
	late
)

// fill offers msg to its slot; the caller holds the miner's mutex.
func (j *job) fill(k slotKind, at time.Time, msg protocol.Message) fillResult {
	s := &j.slots[k]
	switch {
	case s.msg != nil:
		return duplicate
	case s.sealed:
		return late
	}
	s.at, s.msg = at, msg
	close(s.filled)
	return filled
}

// seal ends the wait for a slot; the caller holds the miner's mutex.
func (j *job) seal(k slotKind) { j.slots[k].sealed = true }

// get returns a slot's message and time; the caller holds the miner's mutex or the slot is sealed.
func (j *job) get(k slotKind) (protocol.Message, time.Time) {
	return j.slots[k].msg, j.slots[k].at
}
