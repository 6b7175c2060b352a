package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pair is one turn of the throughput comparison.
type pair struct {
	ours                      result
	exec, bare                float64 // the floors, jobs/s
	jobs                      int     // each side's
	cpuOurs, cpuExec, cpuBare cpuUse
	load                      string // the load average when the pair ended
}

// String is the pair's line: throughput, ratios, the claim → report time, the load average, and
// the CPU a job of each side.
func (p pair) String() string {
	return fmt.Sprintf("scheduler %.0f jobs/s, fork/exec floor %.0f (%.0f%%), bare floor %.0f (%.0f%%); claim → report p50 %s, p99 %s; load %s\n"+
		"    scheduler: %s\n    fork/exec floor: %s\n    bare floor: %s",
		p.ours.rate(), p.exec, 100*p.execRatio(), p.bare, 100*p.bareRatio(), fmtMS(p.ours.runP50), fmtMS(p.ours.runP99), p.load,
		p.cpuOurs.perJob(p.jobs), p.cpuExec.perJob(p.jobs), p.cpuBare.perJob(p.jobs))
}

func (p pair) execRatio() float64 { return p.ours.rate() / p.exec }
func (p pair) bareRatio() float64 { return p.ours.rate() / p.bare }

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

// print writes the verdict table: each target, the figure it judges and whether it is met.
func (v verdicts) print(out io.Writer, o options) {
	fmt.Fprintf(out, "\n%-44s %-34s %s\n", "target", "figure", "verdict")
	row := func(name, figure string, met bool) {
		fmt.Fprintf(out, "%-44s %-34s %s\n", name, figure, map[bool]string{true: "met", false: "MISSED"}[met])
	}
	if len(v.pairs) > 0 {
		m, lo, hi := v.spread(pair.execRatio)
		row(fmt.Sprintf("end to end >= %.0f%% of the fork/exec floor", 100*targetExecRatio),
			fmt.Sprintf("%.0f%% (pairs %.0f–%.0f%%)", 100*m, 100*lo, 100*hi), m >= targetExecRatio)
		m, lo, hi = v.spread(pair.bareRatio)
		row(fmt.Sprintf("end to end >= %.0f%% of River's bare floor", 100*targetBareRatio),
			fmt.Sprintf("%.0f%% (pairs %.0f–%.0f%%)", 100*m, 100*lo, 100*hi), m >= targetBareRatio)
		ours, olo, ohi := v.spread(func(p pair) float64 { return p.ours.rate() })
		exec, elo, ehi := v.spread(func(p pair) float64 { return p.exec })
		bare, blo, bhi := v.spread(func(p pair) float64 { return p.bare })
		fmt.Fprintf(out, "  jobs/s, medians (ranges): scheduler %.0f (%.0f–%.0f), fork/exec floor %.0f (%.0f–%.0f), bare floor %.0f (%.0f–%.0f)\n",
			ours, olo, ohi, exec, elo, ehi, bare, blo, bhi)
		r50, lo50, hi50 := v.spreadDuration(func(p pair) time.Duration { return p.ours.runP50 })
		r99, lo99, hi99 := v.spreadDuration(func(p pair) time.Duration { return p.ours.runP99 })
		slots := o.workers * o.slots
		row(fmt.Sprintf("claim → report p50 <= %s, %d slots", fmtMS(targetRunP50), slots),
			fmt.Sprintf("%s (pairs %s–%s)", fmtMS(r50), fmtMS(lo50), fmtMS(hi50)), r50 <= targetRunP50)
		row(fmt.Sprintf("claim → report p99 <= %s, %d slots", fmtMS(targetRunP99), slots),
			fmt.Sprintf("%s (pairs %s–%s)", fmtMS(r99), fmtMS(lo99), fmtMS(hi99)), r99 <= targetRunP99)
	}
	if p := v.spare; p != nil {
		fmt.Fprintf(out, "  not judged, on %d × %d slots (spare cores): %.0f%% of the fork/exec floor, %.0f%% of the bare; claim → report p50 %s, p99 %s\n",
			o.spareWorkers, o.spareSlots, 100*p.execRatio(), 100*p.bareRatio(), fmtMS(p.ours.runP50), fmtMS(p.ours.runP99))
	}
	row("chains' dispatch p50 <= "+fmtMS(targetP50), fmt.Sprintf("%s (River %s)", fmtMS(v.chains.p50), fmtMS(v.floorP50)), v.chains.p50 <= targetP50)
	row("chains' dispatch p99 <= "+fmtMS(targetP99), fmt.Sprintf("%s (River %s)", fmtMS(v.chains.p99), fmtMS(v.floorP99)), v.chains.p99 <= targetP99)
	if v.scale != nil {
		row(fmt.Sprintf("%d slots: the group completes, connections <= %d", o.scaleWorkers*o.scaleSlots, connBudget),
			fmt.Sprintf("%.0f jobs/s, peak %d connections", v.scale.rate(), v.scalePeak), v.scalePeak <= connBudget)
	}
	fmt.Fprintln(out, "claim+report >= 60% of its floor: build-bench's verdict")
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
