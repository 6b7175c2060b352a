package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/build-scheduler/internal/benchdb"
)

// pair is one turn of the throughput comparison.
type pair struct {
	ours                      result
	exec, bare                float64 // the floors, jobs/s
	jobs                      int     // each side's
	cpuOurs, cpuExec, cpuBare cpuUse
	local                     bool          // Postgres runs on this machine, and its CPU time is counted
	run50, run99              time.Duration // River's fetch → the report: the workers' stage total
	load                      string        // the load average when the pair ended
}

// String is the pair's line: throughput, ratios, River's fetch → the report, the CPU ratios, the
// load average, and the CPU a job of each side.
func (p pair) String() string {
	pg := "not measured"
	if p.local {
		pg = fmt.Sprintf("%.1f×", p.pgRatio())
	}
	return fmt.Sprintf("scheduler %.0f jobs/s, fork/exec floor %.0f (%.0f%%), bare floor %.0f (%.0f%%); River fetch → report p50 %s, p99 %s; CPU a build %.1f× the fork/exec floor's, Postgres's %s; load %s\n"+
		"    scheduler: %s\n    fork/exec floor: %s\n    bare floor: %s",
		p.ours.rate(), p.exec, 100*p.execRatio(), p.bare, 100*p.bareRatio(), fmtMS(p.run50), fmtMS(p.run99), p.cpuRatio(), pg, p.load,
		p.cpuOurs.perJob(p.jobs), p.cpuExec.perJob(p.jobs), p.cpuBare.perJob(p.jobs))
}

func (p pair) execRatio() float64 { return p.ours.rate() / p.exec }
func (p pair) bareRatio() float64 { return p.ours.rate() / p.bare }

// cpuRatio is the machine's CPU a build over its CPU a job of the fork/exec floor; both sides
// run the same number of jobs.
func (p pair) cpuRatio() float64 { return ratio(p.cpuOurs.machine, p.cpuExec.machine) }

// pgRatio is the same for Postgres's CPU alone.
func (p pair) pgRatio() float64 { return ratio(p.cpuOurs.postgres, p.cpuExec.postgres) }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return math.Inf(1)
	}
	return float64(a) / float64(b)
}

// cpuPerJob is u's CPU a job, in milliseconds, of the machine or (postgres) of Postgres alone.
func (p pair) cpuPerJob(u cpuUse, postgres bool) float64 {
	d := u.machine
	if postgres {
		d = u.postgres
	}
	return float64(d.Microseconds()) / 1000 / float64(max(p.jobs, 1))
}

// verdicts are the figures the targets judge.
type verdicts struct {
	floorP50, floorP99 time.Duration // River's chains
	chains             result
	pairs              []pair
	spare              *pair // on spare cores (1 × 2 slots), not judged
	scale              *result
	scalePeak          int
}

// median is the pair of the median fork/exec ratio.
func (v verdicts) median() pair {
	ps := slices.Clone(v.pairs)
	slices.SortFunc(ps, func(a, b pair) int { return cmpFloat(a.execRatio(), b.execRatio()) })
	return ps[len(ps)/2]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// spread is the median and range of f over the pairs.
func (v verdicts) spread(f func(pair) float64) (med, lo, hi float64) {
	xs := make([]float64, len(v.pairs))
	for i, p := range v.pairs {
		xs[i] = f(p)
	}
	slices.Sort(xs)
	return xs[len(xs)/2], xs[0], xs[len(xs)-1]
}

func (v verdicts) spreadDuration(f func(pair) time.Duration) (med, lo, hi time.Duration) {
	m, l, h := v.spread(func(p pair) float64 { return float64(f(p)) })
	return time.Duration(m), time.Duration(l), time.Duration(h)
}

// verdictTable writes the rows of the verdict table.
type verdictTable struct{ out io.Writer }

func (t verdictTable) header() {
	fmt.Fprintf(t.out, "\n%-50s %-44s %s\n", "target", "figure", "verdict")
}

func (t verdictTable) row(name, figure string, met bool) {
	fmt.Fprintf(t.out, "%-50s %-44s %s\n", name, figure, map[bool]string{true: "met", false: "MISSED"}[met])
}

// print writes the verdict table: each target, the figure it judges and whether it is met.
func (v verdicts) print(out io.Writer, o options) {
	t := verdictTable{out}
	if o.big && o.jobs < len(benchdb.Graph(target).Jobs) {
		fmt.Fprintf(out, "\ngroups of %d jobs (-jobs): a smoke run; the targets are set for the 10,000-job group\n", o.jobs)
	}
	t.header()
	if len(v.pairs) > 0 {
		v.printPairs(t, o)
	}
	if p := v.spare; p != nil {
		fmt.Fprintf(out, "  not judged, on %d × %d slots (spare cores): %.0f%% of the fork/exec floor, %.0f%% of the bare; River fetch → report p50 %s, p99 %s; CPU a build %.1f× the fork/exec floor's\n",
			o.spareWorkers, o.spareSlots, 100*p.execRatio(), 100*p.bareRatio(), fmtMS(p.run50), fmtMS(p.run99), p.cpuRatio())
	}
	t.row(fmt.Sprintf("chains' dispatch p50 <= %.1f× River's chained jobs'", targetChainP50),
		fmt.Sprintf("%s, River %s: %.2f×", fmtMS(v.chains.p50), fmtMS(v.floorP50), ratio(v.chains.p50, v.floorP50)),
		ratio(v.chains.p50, v.floorP50) <= targetChainP50)
	t.row(fmt.Sprintf("chains' dispatch p99 <= %.1f× River's chained jobs'", targetChainP99),
		fmt.Sprintf("%s, River %s: %.2f×", fmtMS(v.chains.p99), fmtMS(v.floorP99), ratio(v.chains.p99, v.floorP99)),
		ratio(v.chains.p99, v.floorP99) <= targetChainP99)
	if v.scale != nil {
		t.row(fmt.Sprintf("%d slots: the group completes, connections <= %d", o.scaleWorkers*o.scaleSlots, connBudget),
			fmt.Sprintf("%.0f jobs/s, peak %d connections", v.scale.rate(), v.scalePeak), v.scalePeak <= connBudget)
	}
	fmt.Fprintln(out, "the report >= 60% of its floor (in process, River's fetch left out): build-bench's verdict")
}

// printPairs writes the rows the pairs judge: throughput, CPU a build and River's fetch → the
// report, each the median of the pairs with their range.
func (v verdicts) printPairs(t verdictTable, o options) {
	m, lo, hi := v.spread(pair.execRatio)
	t.row(fmt.Sprintf("end to end >= %.0f%% of the fork/exec floor", 100*targetExecRatio),
		fmt.Sprintf("%.1f%% (pairs %.0f–%.0f%%)", 100*m, 100*lo, 100*hi), m >= targetExecRatio)
	m, lo, hi = v.spread(pair.bareRatio)
	t.row(fmt.Sprintf("end to end >= %.0f%% of River's bare floor", 100*targetBareRatio),
		fmt.Sprintf("%.1f%% (pairs %.0f–%.0f%%)", 100*m, 100*lo, 100*hi), m >= targetBareRatio)
	ours, olo, ohi := v.spread(func(p pair) float64 { return p.ours.rate() })
	exec, elo, ehi := v.spread(func(p pair) float64 { return p.exec })
	bare, blo, bhi := v.spread(func(p pair) float64 { return p.bare })
	fmt.Fprintf(t.out, "  jobs/s, medians (ranges): scheduler %.0f (%.0f–%.0f), fork/exec floor %.0f (%.0f–%.0f), bare floor %.0f (%.0f–%.0f)\n",
		ours, olo, ohi, exec, elo, ehi, bare, blo, bhi)
	v.printCPU(t, false, fmt.Sprintf("CPU a build <= %.0f× the fork/exec floor's a job", targetCPURatio), targetCPURatio)
	v.printCPU(t, true, fmt.Sprintf("Postgres CPU a build <= %.0f× the floor's a job", targetPGCPURatio), targetPGCPURatio)
	r50, lo50, hi50 := v.spreadDuration(func(p pair) time.Duration { return p.run50 })
	r99, lo99, hi99 := v.spreadDuration(func(p pair) time.Duration { return p.run99 })
	slots := o.workers * o.slots
	t.row(fmt.Sprintf("River fetch → report p50 <= %s, %d slots", fmtMS(targetRunP50), slots),
		fmt.Sprintf("%s (pairs %s–%s)", fmtMS(r50), fmtMS(lo50), fmtMS(hi50)), r50 <= targetRunP50)
	t.row(fmt.Sprintf("River fetch → report p99 <= %s, %d slots", fmtMS(targetRunP99), slots),
		fmt.Sprintf("%s (pairs %s–%s)", fmtMS(r99), fmtMS(lo99), fmtMS(hi99)), r99 <= targetRunP99)
}

// printCPU writes the row of a CPU target: the scheduler's CPU a build and the fork/exec floor's
// a job, the machine's or (postgres) Postgres's alone, and their ratio.
func (v verdicts) printCPU(t verdictTable, postgres bool, name string, target float64) {
	if postgres && !v.pairs[0].local {
		fmt.Fprintf(t.out, "%-50s %-44s %s\n", name, "Postgres runs on another machine", "NOT MEASURED")
		return
	}
	r := pair.cpuRatio
	if postgres {
		r = pair.pgRatio
	}
	m, lo, hi := v.spread(r)
	ours, _, _ := v.spread(func(p pair) float64 { return p.cpuPerJob(p.cpuOurs, postgres) })
	exec, _, _ := v.spread(func(p pair) float64 { return p.cpuPerJob(p.cpuExec, postgres) })
	t.row(name, fmt.Sprintf("%.2f vs %.2f ms: %.1f× (pairs %.1f–%.1f×)", ours, exec, m, lo, hi), m <= target)
}

// watchConnections samples the client connections to the bench's database every 100 ms until the
// returned function is called, which returns their peak.
func watchConnections(ctx context.Context, pool *pgxpool.Pool) func() int {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		peak int
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var n int
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`).Scan(&n)
			if err == nil {
				mu.Lock()
				peak = max(peak, n)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return func() int {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
