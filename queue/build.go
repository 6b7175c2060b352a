package queue

import (
	"github.com/riverqueue/river"
)

// QueueBuildScheduler is the queue the build-scheduler works: reports from build workers and its
// own maintenance jobs.
const QueueBuildScheduler = "build_scheduler"

// BuildQueue is the River queue of build jobs for target. River queue names allow only lowercase
// letters and digits separated by single underscores or hyphens, at most 64 characters, so the
// scheduler accepts only targets that keep the name valid (x86_64-linux → build_x86_64-linux).
func BuildQueue(target string) string { return "build_" + target }

// BuildRunArgs is a dispatch token for one ready job of Target. A build worker that receives it
// claims the best ready job of that target at that moment (oldest group first, then priority), so
// the order jobs go out is decided by the scheduler's table rather than by River's queue order.
// The scheduler inserts exactly one token every time a job becomes ready.
type BuildRunArgs struct {
	// Target is the platform whose ready jobs this token may claim, e.g. x86_64-linux.
	Target string `json:"target"`

	// GroupID and JobID name the job whose becoming ready inserted the token, for people reading
	// River UI; the worker may claim another job of the same target.
	GroupID int64 `json:"group_id"`
	JobID   int64 `json:"job_id"`

	// JobName is that job's name within its group, also for River UI; empty on a token the
	// watchdog re-inserts for a target, which names no job.
	JobName string `json:"job_name,omitempty"`
}

// Kind is the job kind of BuildRunArgs.
func (BuildRunArgs) Kind() string { return "build_run" }

// InsertOpts pins BuildRunArgs to its target's queue. MaxAttempts is high because a token is
// cheap and losing one would leave a ready job without a worker until the watchdog notices.
func (a BuildRunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: BuildQueue(a.Target), MaxAttempts: 25}
}

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

// BuildReportArgs carries the outcome of one attempt at a job from a build worker to the
// scheduler. Attempt and LeaseToken identify the attempt: a report from an attempt whose lease was
// lost (the job was handed to another worker meanwhile) changes nothing.
type BuildReportArgs struct {
	JobID      int64 `json:"job_id"`
	Attempt    int   `json:"attempt"`
	LeaseToken int64 `json:"lease_token"`

	// Outcome is BuildSucceeded, BuildFailed or BuildCancelled.
	Outcome BuildOutcome `json:"outcome"`

	// AsBuilt identifies what a successful build produced.
	AsBuilt string `json:"as_built,omitempty"`

	// ExitCode is the command's exit status; -1 when it did not exit on its own.
	ExitCode int `json:"exit_code"`

	// Error says why a failed attempt failed.
	Error string `json:"error,omitempty"`

	// LogIncomplete is set when some of the attempt's output could not be stored. The build's
	// outcome stands regardless: a dropped log never fails a job.
	LogIncomplete bool `json:"log_incomplete,omitempty"`
}

// Kind is the job kind of BuildReportArgs.
func (BuildReportArgs) Kind() string { return "build_report" }

// InsertOpts pins BuildReportArgs to QueueBuildScheduler.
func (BuildReportArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueBuildScheduler, MaxAttempts: 25}
}
