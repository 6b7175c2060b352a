// Package dag validates a submitted group of build jobs before anything is written: names,
// targets, limits and above all the dependency graph, which must be acyclic when it reaches the
// scheduler (Habitat Builder's job server unrolled cycles at runtime; we name them and refuse).
// It does no I/O, so every rule is tested table-driven.
package dag

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"drover.dev/queue"
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
	TimeoutSeconds Integer           `json:"timeout_seconds,omitempty"`
	Priority       Integer           `json:"priority,omitempty"`
	DependsOn      []string          `json:"depends_on,omitempty"`
}

// The range of a job's priority: the column that orders builds is a 32-bit integer, and a
// priority outside it is refused rather than truncated (2^31 would become the lowest).
const (
	MinPriority = math.MinInt32
	MaxPriority = math.MaxInt32
)

// MaxJobsLimit is the largest value MaxJobs may be configured to: the most jobs of a group that
// River's fetch can order (queue.BuildOrderJobsPerGroup).
const MaxJobsLimit = queue.BuildOrderJobsPerGroup

// MaxLimit is the largest value MaxJobs, MaxDeps and MaxJobBytes may be configured to: counts of
// jobs are stored in 32-bit integers.
const MaxLimit = math.MaxInt32

// Limits bound what one submission may ask for. They protect the scheduler from a single group
// that would take its tables or a worker's disk hostage; each is configurable.
type Limits struct {
	MaxJobs        int           // jobs per group
	MaxDeps        int           // dependencies per job
	MaxJobBytes    int           // command + payload + env of one job, in bytes
	DefaultTimeout time.Duration // a job's timeout when it names none
	MaxTimeout     time.Duration // the longest timeout a job may ask for
}

// DefaultLimits are the limits tests and tools validate with: the scheduler's defaults, which
// live in its Config's envconfig tags (its TestConfigLoadsThroughEnvconfig checks they agree).
var DefaultLimits = Limits{
	MaxJobs: 10000, MaxDeps: 1000, MaxJobBytes: 64 << 10,
	DefaultTimeout: 30 * time.Minute, MaxTimeout: 24 * time.Hour,
}

// Check reports the first limit outside its range, so that a misconfigured scheduler refuses to
// start instead of accepting jobs it cannot store.
func (l Limits) Check() error {
	switch {
	case l.MaxJobs < 1 || l.MaxJobs > MaxJobsLimit:
		return fmt.Errorf("max jobs per group %d: must be from 1 to %d", l.MaxJobs, MaxJobsLimit)
	case l.MaxDeps < 0 || l.MaxDeps > MaxLimit:
		return fmt.Errorf("max dependencies per job %d: must be from 0 to %d", l.MaxDeps, MaxLimit)
	case l.MaxJobBytes < 1 || l.MaxJobBytes > MaxLimit:
		return fmt.Errorf("max job bytes %d: must be from 1 to %d", l.MaxJobBytes, MaxLimit)
	case l.MaxTimeout < time.Second:
		return fmt.Errorf("max job timeout %s: must be at least 1s", l.MaxTimeout)
	case l.DefaultTimeout < time.Millisecond || l.DefaultTimeout > l.MaxTimeout:
		return fmt.Errorf("default job timeout %s: must be from 1ms to the max job timeout %s", l.DefaultTimeout, l.MaxTimeout)
	}
	return nil
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
