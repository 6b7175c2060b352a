package batch

import (
	"sync"
	"sync/atomic"
	"time"

	"drover.dev/computehorde/protocol"
)

// Phase is a phase of a batch as Progress reports it: phase 1 reads the database and creates the
// batch row, phase 2 (Run) talks to miners and nothing else, phase 3 writes the results.
type Phase string

// The phases.
const (
	PhasePrepare Phase = "prepare"
	PhaseRun     Phase = "run"
	PhaseWrite   Phase = "write"
)

// Progress is the live record of one batch in flight. Phase 2 may not touch the database, so
// this is the only way to watch a batch while it runs: it lives in memory and is read by the
// HTTP API.
//
// Nothing here may cost the hot phase anything. Stage boundaries and the facts known once per
// stage are written under mu by the stage goroutine, between stages or after the release, and
// never by a writer or reader goroutine; the counters that many goroutines bump (one per miner
// or per job) are atomics, and the readers bump theirs only after the frame's receive instant
// was taken.
type Progress struct {
	batchID, jobID int64
	attempt        int
	startedAt      time.Time

	mu        sync.Mutex
	phase     Phase
	stages    []Stage // FinishedAt is zero while the stage runs
	released  time.Time
	spread    time.Duration
	sent      int
	sendFails int

	miners, executors                              atomic.Int64
	manifests, manifestsFailed                     atomic.Int64
	accepted, declined, noResponse, ready, unready atomic.Int64
	jobs, finished, failed                         atomic.Int64
}

// NewProgress starts the record of a batch, in phase 1.
func NewProgress(batchID, jobID int64, attempt int) *Progress {
	return &Progress{batchID: batchID, jobID: jobID, attempt: attempt, startedAt: time.Now(), phase: PhasePrepare}
}

// SetPhase records that the batch entered phase (PhasePrepare, PhaseRun or PhaseWrite).
func (p *Progress) SetPhase(phase Phase) {
	p.mu.Lock()
	p.phase = phase
	p.mu.Unlock()
}

func (p *Progress) stageStarted(name string, at time.Time) {
	p.mu.Lock()
	p.stages = append(p.stages, Stage{Name: name, StartedAt: at})
	p.mu.Unlock()
}

func (p *Progress) stageFinished(name string, at time.Time, counts map[string]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.stages) - 1; i >= 0; i-- {
		if p.stages[i].Name == name && p.stages[i].FinishedAt.IsZero() {
			p.stages[i].FinishedAt, p.stages[i].Counts = at, counts
			return
		}
	}
}

// stageCounts are the counts a stage ends with. They are final when the stage returns: every
// goroutine that counts for it has ended, and the answers are sealed. They are stored with the
// stage's timings, so the batch shows them after it is written; the live record is gone by then.
func (p *Progress) stageCounts(name string) map[string]int64 {
	switch name {
	case "manifests":
		return map[string]int64{"miners": p.miners.Load(), "received": p.manifests.Load(), "failed": p.manifestsFailed.Load()}
	case "generate":
		return map[string]int64{"executors": p.executors.Load()}
	case "availability":
		return map[string]int64{
			"accepted": p.accepted.Load(), "declined": p.declined.Load(), "no_response": p.noResponse.Load(),
			"ready": p.ready.Load(), "not_ready": p.unready.Load(),
		}
	case "hot":
		p.mu.Lock()
		sent, failed := p.sent, p.sendFails
		p.mu.Unlock()
		return map[string]int64{
			"jobs": p.jobs.Load(), "sent": int64(sent), "send_failed": int64(failed),
			"finished": p.finished.Load(), "failed": p.failed.Load(),
		}
	}
	return nil
}

// manifest counts a miner whose manifest stage ended, with or without a usable manifest.
func (p *Progress) manifest(ok bool) {
	if ok {
		p.manifests.Add(1)
	} else {
		p.manifestsFailed.Add(1)
	}
}

// responded counts a job's answer to V0InitialJobRequest; nil is no answer by the deadline.
func (p *Progress) responded(msg protocol.Message) {
	switch msg.(type) {
	case *protocol.V0AcceptJobRequest:
		p.accepted.Add(1)
	case *protocol.V0DeclineJobRequest:
		p.declined.Add(1)
	default:
		p.noResponse.Add(1)
	}
}

// readied counts an accepted job's readiness: ready, or failed or silent by the deadline.
func (p *Progress) readied(msg protocol.Message) {
	switch msg.(type) {
	case *protocol.V0ExecutorReadyRequest, *protocol.V0StreamingJobReadyRequest:
		p.ready.Add(1)
	default:
		p.unready.Add(1)
	}
}

// hotReleased records the hot phase's release, once every write has ended.
func (p *Progress) hotReleased(at time.Time, spread time.Duration, sent, failed int) {
	p.mu.Lock()
	p.released, p.spread, p.sent, p.sendFails = at, spread, sent, failed
	p.mu.Unlock()
}

// answered counts a job's first answer after its job request. The reader calls it after the
// answer's receive instant was taken, so it costs the measurement nothing.
func (p *Progress) answered(msg protocol.Message) {
	switch msg.(type) {
	case *protocol.V0JobFinishedRequest:
		p.finished.Add(1)
	case *protocol.V0JobFailedRequest, *protocol.V0HordeFailedRequest:
		p.failed.Add(1)
	}
}

// ProgressView is a snapshot of Progress, as GET /v1/batches/current serves it.
type ProgressView struct {
	BatchID   int64       `json:"batch_id"`
	JobID     int64       `json:"job_id"`
	Attempt   int         `json:"attempt"`
	StartedAt time.Time   `json:"started_at"`
	Phase     Phase       `json:"phase"`
	Stage     string      `json:"stage,omitempty"`
	Stages    []StageView `json:"stages"`

	Miners       int64            `json:"miners"`
	Manifests    ManifestCounts   `json:"manifests"`
	Executors    int64            `json:"executors"`
	Availability AvailabilityView `json:"availability"`
	Hot          HotView          `json:"hot"`
}

// StageView is one stage; FinishedAt is nil while it runs, Counts are those it ended with.
type StageView struct {
	Name       string           `json:"name"`
	StartedAt  time.Time        `json:"started_at"`
	FinishedAt *time.Time       `json:"finished_at"`
	Counts     map[string]int64 `json:"counts,omitempty"`
}

// ManifestCounts counts the miners whose manifest stage ended.
type ManifestCounts struct {
	Received int64 `json:"received"`
	Failed   int64 `json:"failed"`
}

// AvailabilityView counts the answers to the initial job requests: accepted, declined or none
// in time; then, of the accepted, ready or not.
type AvailabilityView struct {
	Accepted   int64 `json:"accepted"`
	Declined   int64 `json:"declined"`
	NoResponse int64 `json:"no_response"`
	Ready      int64 `json:"ready"`
	NotReady   int64 `json:"not_ready"`
}

// HotView is the hot phase: job requests prepared, the release and how the writes went, and
// the answers so far (finished: the miner reported the job done, judged only later).
type HotView struct {
	Jobs         int64      `json:"jobs"`
	ReleasedAt   *time.Time `json:"released_at"`
	Sent         int        `json:"sent"`
	SendFailed   int        `json:"send_failed"`
	SendSpreadUS *int64     `json:"send_spread_us"`
	Finished     int64      `json:"finished"`
	Failed       int64      `json:"failed"`
}

// Snapshot copies the record. The counters are read one by one, so a snapshot taken while
// answers arrive may be a few counts apart between fields; each field is exact.
func (p *Progress) Snapshot() ProgressView {
	v := ProgressView{
		BatchID: p.batchID, JobID: p.jobID, Attempt: p.attempt, StartedAt: p.startedAt,
		Miners: p.miners.Load(), Executors: p.executors.Load(),
		Manifests: ManifestCounts{Received: p.manifests.Load(), Failed: p.manifestsFailed.Load()},
		Availability: AvailabilityView{
			Accepted: p.accepted.Load(), Declined: p.declined.Load(), NoResponse: p.noResponse.Load(),
			Ready: p.ready.Load(), NotReady: p.unready.Load(),
		},
		Hot: HotView{Jobs: p.jobs.Load(), Finished: p.finished.Load(), Failed: p.failed.Load()},
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v.Phase = p.phase
	v.Stages = make([]StageView, 0, len(p.stages))
	for _, s := range p.stages {
		sv := StageView{Name: s.Name, StartedAt: s.StartedAt, Counts: s.Counts}
		if s.FinishedAt.IsZero() {
			v.Stage = s.Name
		} else {
			sv.FinishedAt = &s.FinishedAt
		}
		v.Stages = append(v.Stages, sv)
	}
	if !p.released.IsZero() {
		at, us := p.released, p.spread.Microseconds()
		v.Hot.ReleasedAt, v.Hot.SendSpreadUS = &at, &us
		v.Hot.Sent, v.Hot.SendFailed = p.sent, p.sendFails
	}
	return v
}

// Tracker holds the Progress of the batch this process is running. The service runs one batch
// at a time (one worker on the batches queue), so there is at most one.
type Tracker struct {
	cur atomic.Pointer[Progress]
}

// Start begins the record of a batch and makes it current. On a nil Tracker it returns a record
// that nobody reads.
func (t *Tracker) Start(batchID, jobID int64, attempt int) *Progress {
	p := NewProgress(batchID, jobID, attempt)
	if t != nil {
		t.cur.Store(p)
	}
	return p
}

// Done removes p when it is still the current record.
func (t *Tracker) Done(p *Progress) {
	if t != nil {
		t.cur.CompareAndSwap(p, nil)
	}
}

// Current returns the record of the batch in flight, nil when none is.
func (t *Tracker) Current() *Progress {
	if t == nil {
		return nil
	}
	return t.cur.Load()
}
