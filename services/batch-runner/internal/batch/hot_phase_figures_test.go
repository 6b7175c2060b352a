package batch

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// median is the middle of one number over the rounds (the mean of the two middle ones when
// the number of rounds is even).
func median[T ~int64 | ~float64](rs []round, of func(round) T) T {
	xs := make([]T, len(rs))
	for i, r := range rs {
		xs[i] = of(r)
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

// span is the smallest and largest of one number over the rounds, printed beside its median
// as "(rounds lo–hi)".
func span[T ~int64 | ~float64](rs []round, of func(round) T, format func(T) string) string {
	lo, hi := of(rs[0]), of(rs[0])
	for _, r := range rs {
		lo, hi = min(lo, of(r)), max(hi, of(r))
	}
	return fmt.Sprintf("(rounds %s–%s)", format(lo), format(hi))
}

// figures prints the lines of one size and reports its numbers as benchmark metrics.
type figures struct {
	executors int
	b         *testing.B
	cores     cores
}

func (f figures) line(name, format string, args ...any) {
	fmt.Printf("hot-phase executors=%-5d %-17s "+format+"\n", append([]any{f.executors, name}, args...)...)
}

func (f figures) metric(v float64, unit string) { f.b.ReportMetric(v, unit) }

// atTargetSize returns target where the targets are set, at 5,000 executors, and 0 (no
// verdict) at other sizes.
func (f figures) atTargetSize(target float64) float64 {
	if f.executors != 5000 {
		return 0
	}
	return target
}

// meets judges v against an upper bound; a target of 0 gives no verdict.
func meets(v, target float64) string {
	switch {
	case target == 0:
		return ""
	case v <= target:
		return ": met"
	default:
		return ": MISSED"
	}
}

// round prints the key numbers of round i of n as soon as it ends.
func (f figures) round(i, n int, r round) {
	if r.sent != f.executors {
		f.line(fmt.Sprintf("round %d of %d", i, n), "only %d of %d executors got their job (the rest not ready in time); verdicts %v", r.sent, f.executors, r.verdicts)
	}
	f.line(fmt.Sprintf("round %d of %d", i, n), "send spread ours %s  floor %s  ratio %.2f;  arrival spread ours %s  floor %s  asyncio %s  ratio %.2f;  adversaries honest %s  clean %s;  completion p99 %s vs 2x floor send spread %s (%.2f);  %d of %d answers judged right",
		ms(r.send.ours), ms(r.send.floor), r.send.ratio(), ms(r.arrival.ours), ms(r.arrival.floor), ms(r.asyncio.floor), r.arrival.ratio(),
		ms(r.adversary.ours), ms(r.adversary.floor), ms(r.completion.p99), ms(r.completionTarget()), r.completionRatio(), r.right, r.sent)
}

// figure is one ratio line: ours against a reference (the floor, the asyncio method, the clean
// batch) with its target at this size (0: no verdict).
type figure struct {
	name, ref, note string
	of              func(round) spread
	target          float64
}

// summary prints one line per figure over all the rounds and reports the same numbers.
func (f figures) summary(rs []round) {
	f.ratio(rs, figure{name: "send spread", ref: "floor", of: func(r round) spread { return r.send }, target: f.atTargetSize(1.25),
		note: "target <= 1.25 at 5,000 executors"})
	f.ratio(rs, figure{name: "arrival spread", ref: "floor", of: func(r round) spread { return r.arrival }, target: f.atTargetSize(1.25),
		note: "minersim's kernel receive stamps; target <= 1.25 at 5,000 executors"})
	if rs[0].asyncio.floor > 0 {
		f.ratio(rs, figure{name: "vs asyncio", ref: "asyncio", of: func(r round) spread { return r.asyncio }, target: f.atTargetSize(1.0 / 3),
			note: "arrival spread, ours / ComputeHorde's asyncio method (send spread median " + ms(median(rs, func(r round) time.Duration { return r.asyncioSend })) + "); target <= 0.33 at 5,000"})
	}
	if rs[0].adversary.floor > 0 {
		f.ratio(rs, figure{name: "adversaries", ref: "clean", of: func(r round) spread { return r.adversary }, target: f.atTargetSize(1.1),
			note: "honest executors' arrival spread, 5 % of miners misbehaving / the same miners in the clean batch; target <= 1.1 at 5,000"})
	}
	f.completion(rs)
	f.rss(rs)
	f.cpu(rs)
}

func (f figures) ratio(rs []round, fig figure) {
	ours := func(r round) time.Duration { return fig.of(r).ours }
	ref := func(r round) time.Duration { return fig.of(r).floor }
	ratio := func(r round) float64 { return fig.of(r).ratio() }
	m := median(rs, ratio)
	f.line(fig.name, "median of %d rounds: ours %s %s  %s %s %s  ratio %.2f %s  (%s)%s", len(rs),
		ms(median(rs, ours)), span(rs, ours, msShort), fig.ref, ms(median(rs, ref)), span(rs, ref, msShort),
		m, span(rs, ratio, func(v float64) string { return fmt.Sprintf("%.2f", v) }), fig.note, meets(m, fig.target))
	key := strings.ReplaceAll(fig.name, " ", "_")
	f.metric(msf(median(rs, ours)), key+"_ms")
	f.metric(msf(median(rs, ref)), fig.ref+"_"+key+"_ms")
	f.metric(m, key+"_ratio")
}

// completion judges the median of the rounds' p99/(2x floor send spread), each p99 against the
// floor of its own round, measured on the same machine moments later; the medians of p50, p99
// and 2x floor send spread are printed for scale.
func (f figures) completion(rs []round) {
	p50 := median(rs, func(r round) time.Duration { return r.completion.p50 })
	p99 := median(rs, func(r round) time.Duration { return r.completion.p99 })
	answers := median(rs, func(r round) time.Duration { return r.completion.sendSpread })
	perTarget := median(rs, round.completionRatio)
	f.line("completion error", "median of %d rounds: p50 %s  p99 %s  2x floor send spread %s;  median of p99/(2x floor send spread) %.2f (target <= 1)%s  (%d answers a round, median; minersim wrote them within %s)",
		len(rs), ms(p50), ms(p99), ms(median(rs, round.completionTarget)), perTarget, meets(perTarget, 1), int(median(rs, func(r round) float64 { return float64(len(r.completion.errs)) })), ms(answers))
	f.metric(msf(p50), "completion_err_p50_ms")
	f.metric(msf(p99), "completion_err_p99_ms")
	f.metric(perTarget, "completion_err_p99_per_2x_floor_send")
	f.metric(msf(answers), "answer_send_spread_ms")
}

func (f figures) rss(rs []round) {
	var peak, minersimPeak float64
	reset := true
	for _, r := range rs {
		peak, minersimPeak = max(peak, r.peakRSS), max(minersimPeak, r.minersimRSS)
		reset = reset && r.rssReset
	}
	what := "VmHWM of this process during batch.Run, reset just before"
	if !reset {
		what = "VmHWM of this process since it started (reset unavailable)"
	}
	if inProcess() {
		what += "; INCLUDES the in-process minersim"
	} else {
		what += fmt.Sprintf("; excludes minersim, own process, peak %.0f MiB", minersimPeak)
	}
	f.line("peak RSS", "max of %d rounds: batch-runner %.0f MiB  (target <= 300 MiB at 5,000 executors)%s  (%s)",
		len(rs), peak, meets(peak, f.atTargetSize(300)), what)
	f.metric(peak, "peak_rss_MiB")
}

func (f figures) cpu(rs []round) {
	wall := median(rs, func(r round) time.Duration { return r.wall })
	ours := median(rs, func(r round) time.Duration { return r.cpu.ours })
	minersim := median(rs, func(r round) time.Duration { return r.cpu.minersim })
	f.line("cpu", "median of %d rounds: %d cores, %s; during batch.Run (%s wall) batch-runner used %s CPU, minersim %s (%s)",
		len(rs), runtime.NumCPU(), f.cores.note, ms(wall), ms(ours), ms(minersim), rs[0].mode)
	f.metric(sec(ours), "cpu_ours_s")
	f.metric(sec(minersim), "cpu_minersim_s")
}

func ms(d time.Duration) string      { return fmt.Sprintf("%.1f ms", msf(d)) }
func msShort(d time.Duration) string { return fmt.Sprintf("%.1f", msf(d)) }
func msf(d time.Duration) float64    { return float64(d.Nanoseconds()) / 1e6 }
func sec(d time.Duration) float64    { return d.Seconds() }
