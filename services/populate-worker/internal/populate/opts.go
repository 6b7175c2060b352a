package populate

import (
	"time"

	"drover.dev/shared/problem"
)

// MaxProcesses bounds the concurrent makes of one populate run.
const MaxProcesses = 16

// Opts are DataJoint's populate arguments, as a populate run takes them.
type Opts struct {
	// Restriction limits the run to matching keys (DataJoint #1413: also with ReserveJobs).
	Restriction Restriction
	// Order is the order the run's keys are handed to River: original (ascending key), reverse
	// or random.
	Order Order
	// MaxCalls bounds the keys the run takes; zero is no bound.
	MaxCalls int
	// ReserveJobs takes the run's keys from the scheduled jobs (scheduling first, unless
	// SkipSchedule). Without it the run's keys are key_source minus target at the call, scheduled
	// for the run without the rate limit: every make still reserves its key, which is what keeps
	// replicas and runs from making a key twice.
	ReserveJobs bool
	// SkipSchedule leaves out the schedule_jobs call that precedes a reserved run.
	SkipSchedule bool
	// ScheduleInterval overrides min_scheduling_interval for that call when not nil.
	ScheduleInterval *time.Duration
	// SuppressErrors goes on after a failing key; otherwise the run takes no more keys after the
	// first error and ends failed.
	SuppressErrors bool
	// Processes is how many of the run's makes may be queued or running at once, 1 to
	// MaxProcesses.
	Processes int
}

// validate checks opts against t; every problem names its field.
func (o *Opts) validate(t *Table) (filter, error) {
	switch o.Order {
	case "":
		o.Order = OrderOriginal
	case OrderOriginal, OrderReverse, OrderRandom:
	default:
		return filter{}, problem.Unprocessablef("order", "must be original, reverse or random, not %q", o.Order)
	}
	if o.MaxCalls < 0 {
		return filter{}, problem.Unprocessablef("max_calls", "must not be negative")
	}
	if o.Processes == 0 {
		o.Processes = 1
	}
	if o.Processes < 1 || o.Processes > MaxProcesses {
		return filter{}, problem.Unprocessablef("processes", "must be 1 to %d", MaxProcesses)
	}
	return o.Restriction.compile(t, "restriction")
}

// Order is the order populate takes keys in.
type Order string

// The orders DataJoint offers. Original is ascending key order.
const (
	OrderOriginal Order = "original"
	OrderReverse  Order = "reverse"
	OrderRandom   Order = "random"
)

// OptsView is how a run shows the options it took: the populate request's names.
type OptsView struct {
	Restriction           Restriction `json:"restriction"`
	Order                 Order       `json:"order"`
	MaxCalls              int         `json:"max_calls"`
	ReserveJobs           bool        `json:"reserve_jobs"`
	ScheduleJobs          bool        `json:"schedule_jobs"`
	SuppressErrors        bool        `json:"suppress_errors"`
	Processes             int         `json:"processes"`
	MinSchedulingInterval *float64    `json:"min_scheduling_interval,omitempty"`
}

// view is how a run records and shows o.
func (o Opts) view() OptsView {
	v := OptsView{
		Restriction: o.Restriction, Order: o.Order, MaxCalls: o.MaxCalls, ReserveJobs: o.ReserveJobs,
		ScheduleJobs: !o.SkipSchedule, SuppressErrors: o.SuppressErrors, Processes: o.Processes,
	}
	if v.Restriction == nil {
		v.Restriction = Restriction{}
	}
	if o.ScheduleInterval != nil {
		v.MinSchedulingInterval = new(o.ScheduleInterval.Seconds())
	}
	return v
}
