package populate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
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

// Validate checks opts against t; every problem names its field.
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

// Populate is DataJoint's populate for the table registered as name, as a run: it schedules
// (unless told not to), records a run holding the matching scheduled keys in order, and hands
// the first opts.Processes of them to River as populate_make jobs of the run (enqueueRunMakes), in
// one transaction. The run goes on in River's workers on any replica; follow it with GetRun.
func (e *Engine) Populate(ctx context.Context, name string, opts Opts) (Run, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return Run{}, err
	}
	f, err := opts.validate(t)
	if err != nil {
		return Run{}, err
	}
	switch {
	case !opts.ReserveJobs:
		zero := time.Duration(0)
		if _, err := e.ScheduleJobs(ctx, name, ScheduleOpts{Restriction: opts.Restriction, MinInterval: &zero}); err != nil {
			return Run{}, err
		}
	case !opts.SkipSchedule:
		if _, err := e.ScheduleJobs(ctx, name, ScheduleOpts{MinInterval: opts.ScheduleInterval}); err != nil {
			return Run{}, err
		}
	}
	options, err := json.Marshal(opts.view())
	if err != nil {
		return Run{}, fmt.Errorf("populate %s: %w", name, err)
	}
	var id int64
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if id, err = queries.RunInsert(ctx, tx, dbsqlc.RunInsertParams{
			TableName: t.Name, Options: options, Processes: int32(opts.Processes), SuppressErrors: opts.SuppressErrors,
		}); err != nil {
			return fmt.Errorf("record run: %w", err)
		}
		n, err := e.takeKeys(ctx, tx, id, t, f, opts)
		if err != nil {
			return err
		}
		if err := queries.RunSetTotal(ctx, tx, dbsqlc.RunSetTotalParams{Total: n, ID: id}); err != nil {
			return fmt.Errorf("record run: %w", err)
		}
		return e.advanceRun(ctx, tx, id, dbsqlc.RunTallyParams{})
	})
	if err != nil {
		return Run{}, fmt.Errorf("populate %s: %w", name, err)
	}
	return e.GetRun(ctx, id)
}

// takeKeys records the scheduled keys of t matching f as the run's keys, in opts.Order, at most
// opts.MaxCalls. The statement is built here because the restriction's condition and the order
// are chosen at run time; the restriction's values are parameters.
func (e *Engine) takeKeys(ctx context.Context, tx pgx.Tx, run int64, t *Table, f filter, opts Opts) (int64, error) {
	cond, args := f.where("key", []any{run, t.Name})
	ob := map[Order][2]string{
		OrderOriginal: {"key", "s.key"}, OrderReverse: {"key DESC", "s.key DESC"}, OrderRandom: {"o", "s.o"},
	}[opts.Order]
	limit := ""
	if opts.MaxCalls > 0 {
		limit = fmt.Sprintf(" LIMIT %d", opts.MaxCalls)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO populate_run_keys (run_id, seq, table_name, key_hash, key)
		SELECT $1, (row_number() OVER (ORDER BY `+ob[1]+`) - 1)::int, s.table_name, s.key_hash, s.key
		FROM (SELECT table_name, key_hash, key, random() AS o FROM jobs
			WHERE table_name = $2 AND status = 'scheduled' AND `+cond+` ORDER BY `+ob[0]+limit+`) s`, args...)
	if err != nil {
		return 0, fmt.Errorf("take keys of %s: %w", t.Name, err)
	}
	return tag.RowsAffected(), nil
}
