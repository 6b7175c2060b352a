package buildworker

import "time"

// The stages of a token's work, in order, each timed from the end of the one before, so that
// they add up to the whole: drover_build_worker_stage_seconds by stage, which build-e2e-bench
// prints as the per-stage trace of a job's claim → report.
const (
	stageClaim     = "claim"          // Work called → the claim answered (ClaimNext)
	stageWorkdir   = "workdir"        // a work directory taken, the payload written, the heartbeat and log writer set up
	stageStart     = "start"          // the command forked and exec'd (cmd.Start), its group told to the reaper
	stageRun       = "run"            // the command running, until it exits
	stageReap      = "reap"           // its group killed, the leader reaped, its output drained
	stageLogs      = "log_flush"      // the last log chunks stored
	stageHeartbeat = "heartbeat_stop" // the heartbeat stopped and the work directory given back
	stageReport    = "report"         // the report's BEGIN and statement, and the released jobs' tokens inserted
	stageTokenEnd  = "token_end"      // the token's end (queue.JobEndTx) in the report's transaction
	stageCommit    = "commit"         // the report's COMMIT, and its tokens announced
	stageTotal     = "total"          // Work called → the report committed: the sum of the above
)

// Stages are the stage labels in the order they happen, total last.
var Stages = []string{stageClaim, stageWorkdir, stageStart, stageRun, stageReap, stageLogs, stageHeartbeat, stageReport, stageTokenEnd, stageCommit, stageTotal}

// stageClock times one token's stages. A nil clock (no metrics) times nothing.
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
