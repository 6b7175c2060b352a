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

// figures prints the lines of one size and reports its numbers as benchmark metrics.
type figures struct {
	executors int
	b         *testing.B
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
	f.line(fmt.Sprintf("round %d of %d", i, n), "send spread ours %s  floor %s  ratio %.2f;  completion p99 %s vs 2x floor send spread %s (%.2f)",
		ms(r.send.ours), ms(r.send.floor), r.send.ratio(), ms(r.completion.p99), ms(r.completionTarget()), r.completionRatio())
}

// summary prints one line per figure over all the rounds and reports the same numbers.
func (f figures) summary(rs []round) {
	f.ratio("send spread", rs, func(r round) spread { return r.send }, f.atTargetSize(1.25), "target <= 1.25 at 5,000 executors")
	f.ratio("arrival spread", rs, func(r round) spread { return r.arrival }, 0, "seen by minersim, which reads on the same cores")
	f.completion(rs)
	f.rss(rs)
	f.cpu(rs)
}

func (f figures) ratio(name string, rs []round, of func(round) spread, target float64, note string) {
	ours := median(rs, func(r round) time.Duration { return of(r).ours })
	floor := median(rs, func(r round) time.Duration { return of(r).floor })
	ratio := median(rs, func(r round) float64 { return of(r).ratio() })
	f.line(name, "median of %d rounds: ours %s  floor %s  ratio %.2f  (%s)%s", len(rs), ms(ours), ms(floor), ratio, note, meets(ratio, target))
	key := strings.ReplaceAll(name, " ", "_")
	f.metric(msf(ours), key+"_ms")
	f.metric(msf(floor), "floor_"+key+"_ms")
	f.metric(ratio, key+"_ratio")
}

// completion judges the median of the rounds' p99/(2x floor send spread), each p99 against the
// floor of its own round, measured on the same machine moments later; the medians of p50, p99
// and 2x floor send spread are printed for scale.
func (f figures) completion(rs []round) {
	p50 := median(rs, func(r round) time.Duration { return r.completion.p50 })
	p99 := median(rs, func(r round) time.Duration { return r.completion.p99 })
	answers := median(rs, func(r round) time.Duration { return r.completion.sendSpread })
	perTarget := median(rs, round.completionRatio)
	f.line("completion error", "median of %d rounds: p50 %s  p99 %s  2x floor send spread %s;  median of p99/(2x floor send spread) %.2f (target <= 1)%s  (%d answers a round; minersim wrote them within %s)",
		len(rs), ms(p50), ms(p99), ms(median(rs, round.completionTarget)), perTarget, meets(perTarget, 1), f.executors, ms(answers))
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
	f.line("cpu", "median of %d rounds: %d cores shared; during batch.Run (%s wall) batch-runner used %s CPU, minersim %s (%s)",
		len(rs), runtime.NumCPU(), ms(wall), ms(ours), ms(minersim), rs[0].mode)
	f.metric(sec(ours), "cpu_ours_s")
	f.metric(sec(minersim), "cpu_minersim_s")
}

func ms(d time.Duration) string   { return fmt.Sprintf("%.1f ms", msf(d)) }
func msf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
func sec(d time.Duration) float64 { return d.Seconds() }
