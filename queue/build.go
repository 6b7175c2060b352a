package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueBuildScheduler is the queue the build-scheduler works: its own maintenance jobs.
const QueueBuildScheduler = "build_scheduler"

// BuildQueue is the River queue of build jobs for target. River queue names allow only lowercase
// letters and digits separated by single underscores or hyphens, at most 64 characters, so the
// scheduler accepts only targets that keep the name valid (x86_64-linux → build_x86_64-linux).
func BuildQueue(target string) string { return "build_" + target }

// BuildRunArgs is one attempt at one build job: the worker that River's fetch hands it to runs
// exactly this job, as this attempt. The scheduler inserts it in the transaction that makes the
// job ready (or gives it a new attempt), placed in the scheduler's order among its target's
// builds (InOrder). It carries what the build needs, so that the worker runs it without reading
// the job graph first.
type BuildRunArgs struct {
	// Target is the platform the job builds on, e.g. x86_64-linux; its queue is BuildQueue(Target).
	Target string `json:"target"`

	// GroupID, JobID and JobName name the build: its group, its job and the job's name within
	// the group.
	GroupID int64  `json:"group_id"`
	JobID   int64  `json:"job_id"`
	JobName string `json:"job_name,omitempty"`

	// Attempt is the job's attempt this River job runs, from 1. Every attempt has a River job
	// of its own: River UI's Retry of a failed or cancelled build inserts the next attempt's,
	// and the retried one completes naming it.
	Attempt int `json:"attempt,omitempty"`

	// Command is the argv to run; Env is added to the worker's minimal environment; Payload, if
	// any, is written to $DROVER_PAYLOAD_FILE; TimeoutMS bounds the run.
	Command   []string          `json:"command,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Payload   json.RawMessage   `json:"payload,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`

	order time.Time // the River job's scheduled_at (InOrder), not part of the args
}

// InOrder returns a placed at rank in its group's order: its River job is available at once,
// with scheduled_at BuildOrder(a.GroupID, rank), so River's fetch takes it in the scheduler's
// order.
func (a BuildRunArgs) InOrder(rank int) BuildRunArgs {
	a.order = BuildOrder(a.GroupID, rank)
	return a
}

// Hooks gives BuildRunArgs River's insert hook that places it in order: River inserts a job with
// InsertOpts.ScheduledAt as scheduled, whatever the time, and only its scheduler (on the leader,
// every 5 s) makes it available. The hook sets scheduled_at on a job River inserts available
// instead, which River's fetch takes at once, in scheduled_at order.
func (BuildRunArgs) Hooks() []rivertype.Hook { return []rivertype.Hook{&buildOrderHook{}} }

// buildOrderHook is BuildRunArgs' insert hook.
type buildOrderHook struct{ river.HookDefaults }

func (*buildOrderHook) InsertBegin(_ context.Context, p *rivertype.JobInsertParams) error {
	if a, ok := p.Args.(BuildRunArgs); ok && !a.order.IsZero() && p.State == rivertype.JobStateAvailable {
		p.ScheduledAt = &a.order
	}
	return nil
}

// Kind is the job kind of BuildRunArgs.
func (BuildRunArgs) Kind() string { return "build_run" }

// InsertOpts pins BuildRunArgs to its target's queue, with one attempt: River never runs an
// attempt at a build twice on its own. A build whose worker died gets a new attempt as a new
// River job from the scheduler (the liveness sweep), and River UI's Retry, which raises River's
// count, is how a person runs a finished build again.
func (a BuildRunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: BuildQueue(a.Target), MaxAttempts: 1}
}

// BuildOrderJobsPerGroup is the most jobs a group can have for BuildOrder to order them.
const BuildOrderJobsPerGroup = 1 << 20

// BuildOrder is the scheduled_at of a build_run job: River's fetch orders a queue's available
// jobs by priority, then scheduled_at, then id, so with every build at River's default priority
// the oldest group's builds come first, and within a group they come by rank (the job's place
// by highest priority, then lowest id). The time is rank microseconds past group·2^20 µs after
// the Unix epoch: in the past, so the job is available at once, for group ids up to about 1.7
// billion (BuildOrderMaxGroup).
func BuildOrder(groupID int64, rank int) time.Time {
	return time.UnixMicro(groupID*BuildOrderJobsPerGroup + int64(rank)).UTC()
}

// BuildOrderMaxGroup is the largest group id whose BuildOrder is in the past at now.
func BuildOrderMaxGroup(now time.Time) int64 { return now.UnixMicro()/BuildOrderJobsPerGroup - 1 }

// BuildOutcome is how an attempt at a build ended, as its worker reports it.
type BuildOutcome string

// The build outcomes.
const (
	BuildSucceeded BuildOutcome = "succeeded"
	BuildFailed    BuildOutcome = "failed"
	BuildCancelled BuildOutcome = "cancelled"
)

// BuildOutcomes returns every build outcome.
func BuildOutcomes() []BuildOutcome {
	return []BuildOutcome{BuildSucceeded, BuildFailed, BuildCancelled}
}
