// Package dag validates a submitted group of build jobs before anything is written: names,
// targets, limits and above all the dependency graph, which must be acyclic when it reaches the
// scheduler (Habitat Builder's job server unrolled cycles at runtime; we name them and refuse).
// It does no I/O, so every rule is tested table-driven.
package dag

import (
	"encoding/json"
	"time"
)

// Submission is the body of POST /v1/groups.
type Submission struct {
	Name string    `json:"name"`
	Jobs []JobSpec `json:"jobs"`
}

// JobSpec is one job of a submission. Dependencies name other jobs of the same group.
type JobSpec struct {
	Name           string            `json:"name"`
	Target         string            `json:"target"`
	Command        []string          `json:"command"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
	Priority       int               `json:"priority,omitempty"`
	DependsOn      []string          `json:"depends_on,omitempty"`
}

// Limits bound what one submission may ask for. They protect the scheduler from a single group
// that would take its tables or a worker's disk hostage; each is configurable.
type Limits struct {
	MaxJobs        int           // jobs per group
	MaxDeps        int           // dependencies per job
	MaxJobBytes    int           // command + payload + env of one job, in bytes
	DefaultTimeout time.Duration // a job's timeout when it names none
	MaxTimeout     time.Duration // the longest timeout a job may ask for
}

// DefaultLimits are the limits a scheduler runs with unless configured otherwise.
var DefaultLimits = Limits{
	MaxJobs: 10000, MaxDeps: 1000, MaxJobBytes: 64 << 10,
	DefaultTimeout: 30 * time.Minute, MaxTimeout: 24 * time.Hour,
}

// Plan is a validated submission: jobs in submission order with dependencies resolved to
// indexes into Jobs.
type Plan struct {
	Name string
	Jobs []PlannedJob
	// Order lists the indexes of Jobs with every job after its dependencies.
	Order []int
}

// PlannedJob is one validated job.
type PlannedJob struct {
	JobSpec
	Timeout time.Duration
	Deps    []int // indexes into Plan.Jobs
}
