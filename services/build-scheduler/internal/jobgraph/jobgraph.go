// Package jobgraph is the build scheduler's state: groups of jobs whose dependencies form a DAG,
// and every transition a job or group goes through. It is the only code that writes the job
// graph tables.
//
// Each job row keeps its dependencies as an immutable array of job ids plus waiting_on_count, the
// number of them not yet complete (the dependency counter). Every transition is an UPDATE guarded by
// the state it leaves (and, for reports, by the attempt), so a repeated or late message matches no
// row and changes nothing. A transition runs in the caller's transaction together with all its
// consequences: dependents' counters in the same group, dependents becoming ready, the build_run
// River job of each newly ready job (one River job per attempt, which is that build), and the
// group's unfinished-jobs count, split over stripe rows, whose last decrement settles the group. The readiness query
// (a job is ready when all its dependencies are complete) is kept as the check the watchdog runs
// and the recovery path behind POST /v1/admin/recount.
//
// Failure policy: a failed job marks every transitive dependent dependency_failed at once;
// independent branches go on building; the group ends failed when nothing is left to run.
//
// Lock order: a transaction takes row locks in this order, so two transactions never wait on each
// other: job rows in ascending id, then group_stripes rows in ascending stripe, then the groups row.
// Job ids are handed out in topological order at submit, so a transition that locks a job and
// then its dependents goes up in id; statements that lock several jobs lock them ORDER BY id
// first.
//
// Ordering: River's fetch hands out a target's builds by priority, scheduled_at and id. Every
// build has River's default priority and a scheduled_at in the past made of its group id and its
// rank in the group (queue.BuildOrder), so River's order is the scheduler's: the oldest group
// (lowest group id) first, then the highest priority, then the lowest job id.
package jobgraph

import (
	"time"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
)

// StepTimeout is River's timeout of the scheduler's own job kind, build_watchdog: one pass over
// the job graph, taking far less.
const StepTimeout = time.Minute

// queries runs the statements of package store (store/query/*.sql), compiled by sqlc; each takes
// the pool or transaction to run on.
var queries = dbsqlc.New()

// JobState is a build job's state, as Habitat Builder's job server named them.
type JobState string

// The job states.
const (
	Pending          JobState = "pending"
	Waiting          JobState = "waiting_on_dependency"
	Ready            JobState = "ready"
	Running          JobState = "running"
	Complete         JobState = "complete"
	JobFailed        JobState = "job_failed"
	DependencyFailed JobState = "dependency_failed"
	CancelPending    JobState = "cancel_pending"
	CancelComplete   JobState = "cancel_complete"
)

// JobStates returns every job state in lifecycle order.
func JobStates() []JobState {
	return []JobState{Pending, Waiting, Ready, Running, Complete, JobFailed, DependencyFailed, CancelPending, CancelComplete}
}

// GroupState is a group's state: queued until a job of it is dispatched, then dispatching until
// it settles complete, failed or canceled.
type GroupState string

// The group states.
const (
	GroupQueued      GroupState = "queued"
	GroupDispatching GroupState = "dispatching"
	GroupComplete    GroupState = "complete"
	GroupFailed      GroupState = "failed"
	GroupCanceled    GroupState = "canceled"
)

// GroupStates returns every group state.
func GroupStates() []GroupState {
	return []GroupState{GroupQueued, GroupDispatching, GroupComplete, GroupFailed, GroupCanceled}
}

// Graph performs transitions. Builds inserts the build_run River jobs into the build queues
// with InsertManyTx on the transition's transaction, and cancels them with JobCancelTx; it is an
// insert-only client on the build_scheduler schema. A quiet one (queue.NewQuietInserter) leaves
// the notification of the targets' workers to its caller, after the commit (Result.Targets names
// the queues).
type Graph struct {
	Builds *queue.Client
}

// Group is a group as clients see it.
type Group struct {
	ID              int64            `json:"id"`
	Name            string           `json:"name"`
	State           GroupState       `json:"state"`
	CancelRequested bool             `json:"cancel_requested"`
	Counts          map[JobState]int `json:"counts"`
	Total           int              `json:"total"`
	CreatedAt       time.Time        `json:"created_at"`
	UpdatedAt       time.Time        `json:"updated_at"`
	FinishedAt      *time.Time       `json:"finished_at"`
}

// Job is a job as clients see it.
type Job struct {
	ID             int64             `json:"id"`
	GroupID        int64             `json:"group_id"`
	Name           string            `json:"name"`
	Target         string            `json:"target"`
	State          JobState          `json:"state"`
	Priority       int               `json:"priority"`
	Command        []string          `json:"command"`
	Env            map[string]string `json:"env"`
	TimeoutSeconds float64           `json:"timeout_seconds"`
	Dependencies   []int64           `json:"dependencies"`
	WaitingOn      int               `json:"waiting_on_count"`
	Attempt        int               `json:"attempt"`
	MaxAttempts    int               `json:"max_attempts"`
	WorkerID       *string           `json:"worker_id"`
	AsBuilt        *string           `json:"as_built"`
	ExitCode       *int              `json:"exit_code"`
	Error          *string           `json:"error"`
	LogIncomplete  bool              `json:"log_incomplete"`
	CreatedAt      time.Time         `json:"created_at"`
	StartedAt      *time.Time        `json:"started_at"`
	FinishedAt     *time.Time        `json:"finished_at"`
}

// Event is a system event: something the scheduler decided on its own (a lost worker, a stalled
// group, counter drift), with the reason in words.
type Event struct {
	ID        int64     `json:"id"`
	GroupID   *int64    `json:"group_id"`
	JobID     *int64    `json:"job_id"`
	Kind      EventKind `json:"kind"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
}

// IsFinal reports whether a job in state s will not change again without a retry.
func IsFinal(s JobState) bool {
	switch s {
	case Complete, JobFailed, DependencyFailed, CancelComplete:
		return true
	}
	return false
}
