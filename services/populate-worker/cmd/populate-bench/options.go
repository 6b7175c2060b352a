package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The figures the bench can print, in the order it prints them (-figures picks some).
const (
	figSchedule = "schedule" // schedule_jobs against its floor, then the feeder's rate
	figEngine   = "engine"   // the engine's make loop (MakeKey without River) against a SKIP LOCKED loop
	figE2E      = "e2e"      // end to end through the service's River workers against River's bare floor
	figRuns     = "runs"     // one populate run against two over the same keys
)

var allFigures = []string{figSchedule, figEngine, figE2E, figRuns}

// maxWorkers is the most workers a measurement takes (-workers).
const maxWorkers = 16

// options are the benchmark's flags.
type options struct {
	serverURL string
	keys      int
	jobs      int
	workers   []int
	keep      bool
	figures   []string
	// e2eKeys is the keys of an end-to-end measurement at 16 workers (e2eKeysFor).
	e2eKeys   int
	e2eRounds int
	// runsKeys, runsMake and runsWorkers shape the two-runs figure: that many keys, each make
	// sleeping runsMake, on MAKE_WORKERS runsWorkers.
	runsKeys    int
	runsMake    time.Duration
	runsWorkers int
	cpuProfile  string
}

func parse(args []string, getenv func(string) string) (options, error) {
	o := options{serverURL: getenv("DATABASE_URL")}
	if o.serverURL == "" {
		o.serverURL = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	var workers, figures string
	var scheduleOnly bool
	fs := flag.NewFlagSet("populate-bench", flag.ContinueOnError)
	fs.IntVar(&o.keys, "keys", 1_000_000, "key_source size for the schedule_jobs measurement")
	fs.IntVar(&o.jobs, "jobs", 20_000, "scheduled jobs per measurement of the engine's make loop (and FEED_AHEAD of the feeder's)")
	fs.StringVar(&workers, "workers", "1,4,16", "concurrent workers (MAKE_WORKERS end to end), comma separated")
	fs.BoolVar(&o.keep, "keep", false, "keep the database of the schedule and engine figures")
	fs.StringVar(&figures, "figures", strings.Join(allFigures, ","), "figures to measure, comma separated: "+strings.Join(allFigures, ", "))
	fs.BoolVar(&scheduleOnly, "schedule-only", false, "measure schedule_jobs and the feeder only (-figures "+figSchedule+")")
	fs.IntVar(&o.e2eKeys, "e2e-keys", 5_000, "keys of an end-to-end measurement at 16 workers; fewer workers make proportionally fewer (at least 100)")
	fs.IntVar(&o.e2eRounds, "e2e-rounds", 3, "end-to-end rounds, each ours and River's floor in turn, a fresh database each")
	fs.IntVar(&o.runsKeys, "runs-keys", 400, "keys of the two-runs figure")
	fs.DurationVar(&o.runsMake, "runs-make", 50*time.Millisecond, "how long each make of the two-runs figure takes")
	fs.IntVar(&o.runsWorkers, "runs-workers", 4, "MAKE_WORKERS of the two-runs figure")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.workers, err = parseWorkers(workers); err != nil {
		return o, err
	}
	if o.figures, err = parseFigures(figures); err != nil {
		return o, err
	}
	if scheduleOnly {
		o.figures = []string{figSchedule}
	}
	if o.keys < 1 || o.jobs < 1 || o.e2eKeys < 1 || o.e2eRounds < 1 || o.runsKeys < 1 {
		return o, fmt.Errorf("-keys, -jobs, -e2e-keys, -e2e-rounds and -runs-keys must be positive")
	}
	if o.runsWorkers < 2 || o.runsMake <= 0 {
		// Two runs of processes 1 make two keys at once: fewer workers would serialise them.
		return o, fmt.Errorf("-runs-workers must be at least 2 and -runs-make positive")
	}
	return o, nil
}

func parseWorkers(s string) ([]int, error) {
	var out []int
	for _, w := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 || n > maxWorkers {
			return nil, fmt.Errorf("-workers: %q is not 1 to %d", w, maxWorkers)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseFigures(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(allFigures, f) {
			return nil, fmt.Errorf("-figures: %q is not one of %s", f, strings.Join(allFigures, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

func (o options) has(figure string) bool { return slices.Contains(o.figures, figure) }

// e2eKeysFor is the keys of an end-to-end measurement with w workers: River's fetch cooldown
// caps a producer at w jobs per cooldown (queue.Fetch), ours and the floor alike, so a
// measurement with fewer workers makes proportionally fewer keys to last about as long.
func (o options) e2eKeysFor(w int) int {
	return max(100, o.e2eKeys*w/maxWorkers)
}
