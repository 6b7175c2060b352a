package buildworker

import (
	"sync"
	"time"
)

// The stages of a build's work, in order, each timed from the end of the one before, so that
// they add up to the whole: drover_build_worker_stage_seconds by stage, which build-e2e-bench
// prints as the per-stage trace of a build's River fetch → report.
const (
	stageWorkdir = "workdir"   // Work called → a work directory taken, the payload written, the log writer set up
	stageStart   = "start"     // the command forked and exec'd (cmd.Start), its group told to the reaper
	stageRun     = "run"       // the command running, until it exits
	stageReap    = "reap"      // its group killed, the leader reaped, its output drained
	stageLogs    = "log_flush" // the last log chunks stored and the work directory given back
	stageReport  = "report"    // the report's BEGIN and statement, the released jobs' River jobs inserted
	stageCommit  = "commit"    // the report's COMMIT (and a failed build's River job ended), its River jobs announced
	stageTotal   = "total"     // Work called → the report committed: the sum of the above
)

// Stages are the stage labels in the order they happen, then total, then a slot's idle time.
var Stages = []string{stageWorkdir, stageStart, stageRun, stageReap, stageLogs, stageReport, stageCommit, stageTotal, stageIdle, stageHandover}

// stageClock times one build's stages. A nil clock (no metrics) times nothing.
type stageClock struct {
	m           *Metrics
	first, last time.Time
}

func newStageClock(m *Metrics) *stageClock {
	if m == nil {
		return nil
	}
	now := time.Now()
	return &stageClock{m: m, first: now, last: now}
}

// lap ends stage now and starts the next one.
func (c *stageClock) lap(stage string) {
	if c == nil {
		return
	}
	now := time.Now()
	c.m.stage(stage, now.Sub(c.last))
	c.last = now
}

// end ends the last stage and observes the total.
func (c *stageClock) end(stage string) {
	if c == nil {
		return
	}
	c.lap(stage)
	c.m.stage(stageTotal, c.last.Sub(c.first))
}

// stageIdle is not a stage of a build's work but the time a slot waited for it: from the end of
// the slot's previous build's Work (the report committed) to the start of this one's, which is
// River completing the previous River job, fetching the next one and handing it over. It is
// outside the total.
const stageIdle = "slot_idle"

// stageHandover is the last part of a slot's idle time: from River fetching the River job (its
// attempted_at) to Work starting.
const stageHandover = "handover"

// idleSlots times the gap between a slot's builds. River does not say which slot works a River
// job, so a build starting takes the slot freed longest ago: with every slot busy between gaps, the
// gaps it observes are the slots' own. Slots that have not worked a build yet are not counted.
type idleSlots struct {
	mu   sync.Mutex
	free map[string][]time.Time // by target, oldest first
}

// start observes the idle time of the slot a build of target starts on, fetched at fetched.
func (s *idleSlots) start(m *Metrics, target string, fetched time.Time) {
	if m == nil {
		return
	}
	m.stage(stageHandover, time.Since(fetched))
	s.mu.Lock()
	free := s.free[target]
	if len(free) == 0 {
		s.mu.Unlock()
		return
	}
	since := free[0]
	s.free[target] = free[1:]
	s.mu.Unlock()
	m.stage(stageIdle, time.Since(since))
}

// end frees a slot of target.
func (s *idleSlots) end(m *Metrics, target string) {
	if m == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free == nil {
		s.free = map[string][]time.Time{}
	}
	s.free[target] = append(s.free[target], time.Now())
}
