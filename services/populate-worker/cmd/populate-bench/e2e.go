package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/wiring"
)

// e2e measures what goes through the service's own River workers, each measurement on a fresh
// database cloned from one template.
type e2e struct {
	o        options
	out      io.Writer
	scratch  *scratch
	settings wiring.Settings // the service's defaults (config.Defaults); each figure sets MakeWorkers and FeedOff
}

// e2eTarget is the share of River's bare floor's rate, in percent, that the path users get
// should reach at maxWorkers make workers.
const e2eTarget = 60.0

// with is the service's settings with makeWorkers make workers, its feeder on or off.
func (b *e2e) with(makeWorkers int, feedOff bool) wiring.Settings {
	s := b.settings
	s.MakeWorkers, s.FeedOff = makeWorkers, feedOff
	return s
}

// measurement is one end-to-end measurement: n jobs from the first insert to the last completion.
type measurement struct {
	keys int
	took time.Duration
	cpu  cpuUse
}

func (m measurement) rate() float64 { return float64(m.keys) / m.took.Seconds() }

// endToEnd prints the path users get against River's bare floor at each number of workers.
func (b *e2e) endToEnd(ctx context.Context) error {
	fmt.Fprintf(b.out, "end to end, the path users get: schedule_jobs → feeder (%s) → %s jobs → River fetch → MakeWorker → make (no-op, one row) → complete,\n",
		populate.FeedArgs{}.Kind(), queue.PopulateMakeArgs{}.Kind())
	fmt.Fprintf(b.out, "  on the service's own River client (FetchCooldown %s, FetchPollInterval %s, queue %s MaxWorkers = MAKE_WORKERS, pool max(14, MAKE_WORKERS + %d)),\n",
		queue.FetchCooldown, river.FetchPollIntervalDefault, queue.QueuePopulate, wiring.PoolHeadroom)
	fmt.Fprintf(b.out, "  against River's bare floor: as many no-op jobs inserted at once (COPY) into the same queue of the same client and pool;\n")
	fmt.Fprintf(b.out, "  %d rounds, ours and the floor in turns, each on a fresh database; medians. CPU a key: this process + Postgres's backends of the database\n",
		b.o.e2eRounds)
	for _, w := range b.o.workers {
		if err := b.endToEndAt(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// endToEndAt measures ours and the floor with w make workers, o.e2eRounds times each, and prints
// each round and their medians.
func (b *e2e) endToEndAt(ctx context.Context, w int) error {
	n := b.o.e2eKeysFor(w)
	var ours, floor []measurement
	for r := range b.o.e2eRounds {
		// The floor first in rounds 1, 3, …, ours first in rounds 2, 4, …: a drift of the
		// machine's speed then favours neither.
		for _, isOurs := range [][]bool{{false, true}, {true, false}}[r%2] {
			measure, list := b.floor, &floor
			if isOurs {
				measure, list = b.ours, &ours
			}
			m, err := measure(ctx, w, n)
			if err != nil {
				return fmt.Errorf("end to end, %d workers, round %d: %w", w, r+1, err)
			}
			*list = append(*list, m)
		}
		o, f := ours[r], floor[r]
		fmt.Fprintf(b.out, "    MAKE_WORKERS %2d round %d: ours %6.0f keys/s, CPU a key %s; floor %6.0f jobs/s, CPU a job %s\n",
			w, r+1, o.rate(), o.cpu.perKey(n), f.rate(), f.cpu.perKey(n))
	}
	b.printEndToEnd(w, n, ours, floor)
	return nil
}

// printEndToEnd prints the medians of w workers' rounds, the ratio and the verdict.
func (b *e2e) printEndToEnd(w, n int, ours, floor []measurement) {
	ratios, cpuRatios := make([]float64, len(ours)), make([]float64, len(ours))
	for i := range ours {
		ratios[i] = 100 * ours[i].rate() / floor[i].rate()
		cpuRatios[i] = float64(ours[i].cpu.total()) / float64(floor[i].cpu.total())
	}
	rate := func(m measurement) float64 { return m.rate() }
	cpu := func(m measurement) float64 { return float64(m.cpu.total().Microseconds()) / 1000 / float64(n) }
	ratio := median(ratios)
	verdict := fmt.Sprintf("none below %d workers", maxWorkers)
	if w >= maxWorkers {
		verdict = fmt.Sprintf(">= %.0f %%: %s", e2eTarget, okOrBelow(ratio >= e2eTarget))
	}
	fmt.Fprintf(b.out, "  MAKE_WORKERS %2d, %d keys: ours %6.0f keys/s  floor %6.0f jobs/s  ratio %5.1f %%  target %s\n",
		w, n, median(mapped(ours, rate)), median(mapped(floor, rate)), ratio, verdict)
	fmt.Fprintf(b.out, "                  CPU a key: ours %.2f ms  floor %.2f ms  ours/floor %.2f×\n",
		median(mapped(ours, cpu)), median(mapped(floor, cpu)), median(cpuRatios))
}

// ours makes n keys end to end with w make workers on a fresh database: schedule_jobs, then
// the service's feeder and make workers, until every key's make job has completed.
func (b *e2e) ours(ctx context.Context, w, n int) (measurement, error) {
	db, err := b.scratch.fresh(ctx, n, 0)
	if err != nil {
		return measurement{}, err
	}
	defer db.drop(ctx)
	made := &makeCounts{}
	var engine *populate.Engine
	s := b.with(w, false)
	svc, err := startWorker(ctx, db.url, s, wireMakes(ctx, benchTables(made, b.o.runsMake), s, &engine))
	if err != nil {
		return measurement{}, err
	}
	m, err := measure(ctx, db, n, queue.PopulateMakeArgs{}.Kind(), func() error {
		_, err := engine.ScheduleJobs(ctx, e2eTable, populate.ScheduleOpts{})
		return err
	})
	if err == nil {
		err = made.check(n)
	}
	return m, errors.Join(err, svc.stop())
}

// floor runs n no-op River jobs on the same service wiring, inserted at once.
func (b *e2e) floor(ctx context.Context, w, n int) (measurement, error) {
	db, err := b.scratch.fresh(ctx, 0, 0)
	if err != nil {
		return measurement{}, err
	}
	defer db.drop(ctx)
	svc, err := startWorker(ctx, db.url, b.with(w, false), wireFloor)
	if err != nil {
		return measurement{}, err
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: floorArgs{}}
	}
	m, err := measure(ctx, db, n, floorArgs{}.Kind(), func() error {
		_, err := svc.ins.InsertManyFast(ctx, params)
		return err
	})
	return m, errors.Join(err, svc.stop())
}

// pollEvery is how often a measurement looks whether its jobs have completed.
const pollEvery = 20 * time.Millisecond

// measureTimeout bounds one measurement.
const measureTimeout = 10 * time.Minute

// measure calls start, which inserts the jobs (or what inserts them), and waits until n River
// jobs of kind have completed; it returns how long that took from start's call and the CPU
// spent meanwhile. A job of kind that fails ends it at once.
func measure(ctx context.Context, db *scratchDB, n int, kind string, start func() error) (measurement, error) {
	before, err := sampleCPU(ctx, db.conn)
	if err != nil {
		return measurement{}, err
	}
	t0 := time.Now()
	if err := start(); err != nil {
		return measurement{}, err
	}
	for {
		var done, failed int
		err := db.conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'completed'),
				count(*) FILTER (WHERE state IN ('discarded', 'cancelled'))
			FROM populate_worker.river_job WHERE kind = $1`, kind).Scan(&done, &failed)
		switch {
		case err != nil:
			return measurement{}, fmt.Errorf("count completed %s jobs: %w", kind, err)
		case failed > 0:
			return measurement{}, fmt.Errorf("%d %s jobs failed (discarded or cancelled)", failed, kind)
		case done >= n:
			took := time.Since(t0)
			after, err := sampleCPU(ctx, db.conn)
			return measurement{keys: n, took: took, cpu: after.since(before)}, err
		case time.Since(t0) > measureTimeout:
			return measurement{}, fmt.Errorf("%d of %d %s jobs completed after %s", done, n, kind, measureTimeout)
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return measurement{}, err
		}
	}
}

// The tables the service-run figures make: e2eTable, a no-op make returning one row, and
// slowTable, whose make takes the two-runs figure's time.
const (
	e2eTable  = "e2e"
	slowTable = "slow"
)

// benchTables registers the tables of scratchTables, counting every make call in made.
func benchTables(made *makeCounts, slow time.Duration) *populate.Registry {
	reg := populate.NewRegistry()
	noop := func(_ context.Context, _ pgx.Tx, key populate.Key) ([]populate.Row, error) {
		made.add(key)
		return []populate.Row{{"v": 1}}, nil
	}
	sleep := func(ctx context.Context, _ pgx.Tx, key populate.Key) ([]populate.Row, error) {
		made.add(key)
		if err := sleepCtx(ctx, slow); err != nil {
			return nil, err
		}
		return []populate.Row{{"v": 1}}, nil
	}
	for _, t := range []populate.Table{
		{Name: e2eTable, Target: "e2e_dst", PrimaryKey: []string{"k"}, KeySource: "SELECT k FROM e2e_src", Make: noop},
		{Name: slowTable, Target: "slow_dst", PrimaryKey: []string{"k"}, KeySource: "SELECT k FROM slow_src", Make: sleep},
	} {
		if err := reg.Register(t); err != nil {
			panic(fmt.Sprintf("bench table %s: %v", t.Name, err)) // the definitions above are wrong
		}
	}
	return reg
}

// makeCounts counts make calls per key.
type makeCounts struct{ m sync.Map } // key text → *atomic.Int64

func (c *makeCounts) add(key populate.Key) {
	n, _ := c.m.LoadOrStore(key.String("k"), new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// check fails unless exactly n keys were made, each once.
func (c *makeCounts) check(n int) error {
	keys, twice := 0, 0
	c.m.Range(func(_, v any) bool {
		keys++
		if v.(*atomic.Int64).Load() > 1 {
			twice++
		}
		return true
	})
	if keys != n || twice > 0 {
		return fmt.Errorf("make was called for %d keys of %d, %d of them more than once", keys, n, twice)
	}
	return nil
}

func okOrBelow(ok bool) string {
	if ok {
		return "ok"
	}
	return "BELOW TARGET"
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mapped(ms []measurement, f func(measurement) float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
