package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The per-stage trace of a build's work comes from the build-workers' own histogram,
// drover_build_worker_stage_seconds, read from their /metrics before and after a group: the
// difference is that group's.
const stageMetric = "drover_build_worker_stage_seconds"

// stageOrder is the order the worker's stages happen in (buildworker.Stages), then their total:
// Work starting → the report committed.
var stageOrder = []string{"workdir", "start", "run", "reap", "log_flush", "report", "commit", "total"}

// histogram is one stage's cumulative bucket counts by upper bound, and its sum and count.
type histogram struct {
	buckets map[float64]float64
	sum     float64
	count   float64
}

type stageTrace map[string]*histogram

// scrapeStages reads and adds up the stage histograms of the workers at bases.
func scrapeStages(ctx context.Context, bases []string) (stageTrace, error) {
	t := stageTrace{}
	for _, base := range bases {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("read the stage trace of %s: %w", base, err)
		}
		err = t.add(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the stage trace of %s: %w", base, err)
		}
	}
	return t, nil
}

// add parses the stage metric's lines of a Prometheus text exposition.
func (t stageTrace) add(r io.Reader) error {
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, stageMetric) {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
		stage, le := label(labels, "stage"), label(labels, "le")
		h := t[stage]
		if h == nil {
			h = &histogram{buckets: map[float64]float64{}}
			t[stage] = h
		}
		switch strings.TrimPrefix(name, stageMetric) {
		case "_bucket":
			bound, err := strconv.ParseFloat(le, 64) // +Inf parses
			if err != nil {
				return fmt.Errorf("%q: %w", line, err)
			}
			h.buckets[bound] += v
		case "_sum":
			h.sum += v
		case "_count":
			h.count += v
		}
	}
	return lines.Err()
}

func label(labels, name string) string {
	for _, l := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(l, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// since is what happened between before and t.
func (t stageTrace) since(before stageTrace) stageTrace {
	d := stageTrace{}
	for stage, h := range t {
		b := before[stage]
		if b == nil {
			b = &histogram{}
		}
		n := &histogram{buckets: map[float64]float64{}, sum: h.sum - b.sum, count: h.count - b.count}
		for bound, c := range h.buckets {
			n.buckets[bound] = c - b.buckets[bound]
		}
		d[stage] = n
	}
	return d
}

// quantile estimates the q-quantile by linear interpolation inside its bucket, as Prometheus's
// histogram_quantile does.
func (h *histogram) quantile(q float64) time.Duration {
	if h == nil || h.count == 0 {
		return 0
	}
	bounds := make([]float64, 0, len(h.buckets))
	for b := range h.buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	rank := q * h.count
	lower, below := 0.0, 0.0
	for _, b := range bounds {
		c := h.buckets[b]
		if c >= rank {
			if b > 1e9 { // +Inf: the highest finite bound is the best estimate
				return seconds(lower)
			}
			return seconds(lower + (b-lower)*(rank-below)/max(c-below, 1e-9))
		}
		lower, below = b, c
	}
	return seconds(lower)
}

func (h *histogram) mean() time.Duration {
	if h == nil || h.count == 0 {
		return 0
	}
	return seconds(h.sum / h.count)
}

// print writes the trace, a stage a line.
func (t stageTrace) print(out io.Writer, title string) {
	total := t["total"]
	if total == nil || total.count == 0 {
		fmt.Fprintf(out, "  per-stage trace (%s): no builds traced\n", title)
		return
	}
	fmt.Fprintf(out, "  per-stage trace of a build's work (%s, %0.f builds; each stage from the end of the one before; total is Work starting → the report committed):\n", title, total.count)
	fmt.Fprintf(out, "    %-16s %9s %9s %9s %7s\n", "stage", "mean", "p50", "p99", "share")
	for _, s := range stageOrder {
		h := t[s]
		if h == nil {
			continue
		}
		fmt.Fprintf(out, "    %-16s %9s %9s %9s %6.0f%%\n", s, fmtMS(h.mean()), fmtMS(h.quantile(0.5)), fmtMS(h.quantile(0.99)), 100*h.sum/max(total.sum, 1e-9))
	}
	// Outside the total; their means would count the wait of a group's first builds since the
	// group before.
	if h := t["slot_idle"]; h != nil && h.count > 0 {
		fmt.Fprintf(out, "    %-16s %9s %9s %9s   a slot's wait from its previous build's report to this one's Work starting\n",
			"slot_idle", "", fmtMS(h.quantile(0.5)), fmtMS(h.quantile(0.99)))
	}
	if h := t["handover"]; h != nil && h.count > 0 {
		fmt.Fprintf(out, "    %-16s %9s %9s %9s   of which River's fetch of the build's River job → Work starting\n",
			"handover", "", fmtMS(h.quantile(0.5)), fmtMS(h.quantile(0.99)))
	}
}

// plus is the sum of t and u (either may be nil).
func (t stageTrace) plus(u stageTrace) stageTrace {
	s := stageTrace{}
	for _, src := range []stageTrace{t, u} {
		for stage, h := range src {
			n := s[stage]
			if n == nil {
				n = &histogram{buckets: map[float64]float64{}}
				s[stage] = n
			}
			n.sum += h.sum
			n.count += h.count
			for bound, c := range h.buckets {
				n.buckets[bound] += c
			}
		}
	}
	return s
}

// busy is the time the slots spent working builds: the sum of the totals.
func (t stageTrace) busy() time.Duration {
	if h := t["total"]; h != nil {
		return seconds(h.sum)
	}
	return 0
}
