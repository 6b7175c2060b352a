package populate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"drover.dev/shared/problem"
)

// MaxProcesses bounds the concurrent makes of one populate call.
const MaxProcesses = 16

// Opts are DataJoint's populate arguments.
type Opts struct {
	// Restriction limits the call to matching keys (DataJoint #1413: also with ReserveJobs).
	Restriction Restriction
	// Order is original (ascending key), reverse or random.
	Order Order
	// MaxCalls bounds the makes this call runs; zero is no bound.
	MaxCalls int
	// ReserveJobs works through the jobs table (scheduling first, unless SkipSchedule); without
	// it keys come straight from key_source minus target and nothing is reserved or recorded.
	ReserveJobs bool
	// SkipSchedule leaves out the schedule_jobs call that precedes a reserved populate.
	SkipSchedule bool
	// ScheduleInterval overrides min_scheduling_interval for that call when not nil.
	ScheduleInterval *time.Duration
	// SuppressErrors goes on after a failing key; otherwise the call stops at the first error.
	SuppressErrors bool
	// Processes is the number of concurrent makes, 1 to MaxProcesses.
	Processes int
}

// KeyError is one failed key of a populate call.
type KeyError struct {
	KeyHash string `json:"key_hash,omitempty"`
	Key     Key    `json:"key"`
	Error   string `json:"error"`
}

// Result is what populate returns.
type Result struct {
	SuccessCount int        `json:"success_count"`
	ErrorList    []KeyError `json:"error_list"`
	// Stopped is true when an error ended the call early (SuppressErrors false).
	Stopped bool `json:"stopped"`
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

// Populate is DataJoint's populate for the table registered as name.
func (e *Engine) Populate(ctx context.Context, name string, opts Opts) (Result, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return Result{}, err
	}
	f, err := opts.validate(t)
	if err != nil {
		return Result{}, err
	}
	if opts.ReserveJobs && !opts.SkipSchedule {
		if _, err := e.ScheduleJobs(ctx, name, ScheduleOpts{MinInterval: opts.ScheduleInterval}); err != nil {
			return Result{}, err
		}
	}
	src, err := e.keySource(ctx, t, f, opts)
	if err != nil {
		return Result{}, err
	}
	return e.drive(ctx, src, opts)
}

// drive runs opts.Processes loops taking keys from src until it is empty, the call budget is
// spent or (without SuppressErrors) a key fails.
func (e *Engine) drive(ctx context.Context, src source, opts Opts) (Result, error) {
	var (
		mu    sync.Mutex
		res   = Result{ErrorList: []KeyError{}}
		calls int
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if res.Stopped || (opts.MaxCalls > 0 && calls >= opts.MaxCalls) {
			return false
		}
		calls++
		return true
	}
	report := func(r *reservation, makeErr error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(makeErr, errAlreadyMade):
			calls-- // settled without make: it spends none of max_calls and is not a success
			return
		case makeErr == nil:
			res.SuccessCount++
			return
		}
		res.ErrorList = append(res.ErrorList, KeyError{KeyHash: r.hash, Key: r.key, Error: makeErr.Error()})
		res.Stopped = res.Stopped || !opts.SuppressErrors
	}
	g, gctx := errgroup.WithContext(ctx)
	for range opts.Processes {
		g.Go(func() error { return e.loop(gctx, src, take, report) })
	}
	// Wait before reading res: in `return res, g.Wait()` Go leaves unspecified whether res is
	// read before or after the loops finish.
	err := g.Wait()
	return res, err
}

// loop is one process of populate: acquire a connection, take a key, make it, repeat.
func (e *Engine) loop(ctx context.Context, src source, take func() bool, report func(*reservation, error)) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
	for take() {
		r, err := src.next(ctx, conn)
		if err != nil || r == nil {
			return err
		}
		makeErr, err := e.makeOne(ctx, r)
		if errors.Is(err, ErrNotReserved) {
			continue // reclaimed while we made it: its outcome is someone else's now
		}
		if errors.Is(err, errAlreadyMade) {
			report(r, err)
			continue
		}
		if err != nil {
			return err
		}
		report(r, makeErr)
	}
	return nil
}

// makeOne makes a reserved key through run, settling its River job in the finishing
// transaction, or a direct one (no jobs row) without recording.
func (e *Engine) makeOne(ctx context.Context, r *reservation) (makeErr, err error) {
	if r.direct {
		makeErr = e.makeAndCommit(ctx, r, nil)
		if errors.Is(makeErr, errAlreadyMade) {
			return nil, makeErr
		}
		return makeErr, nil
	}
	return e.run(ctx, r, e.settleRiverJobs(r))
}
