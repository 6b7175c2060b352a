package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// stage is one of a batch's stages, live or as stored: its span and the counts it ended with.
type stage struct {
	Name       string         `json:"name"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	Counts     map[string]int `json:"counts"`
}

// progress is the part of batch-runner's GET /v1/batches/current the demo prints: the stages so
// far and the counts of the running one.
type progress struct {
	BatchID   int64   `json:"batch_id"`
	JobID     int64   `json:"job_id"`
	Stages    []stage `json:"stages"`
	Miners    int     `json:"miners"`
	Executors int     `json:"executors"`
	Manifests struct {
		Received int `json:"received"`
		Failed   int `json:"failed"`
	} `json:"manifests"`
	Availability struct {
		Accepted int `json:"accepted"`
		Declined int `json:"declined"`
		Ready    int `json:"ready"`
	} `json:"availability"`
	Hot struct {
		Jobs         int        `json:"jobs"`
		ReleasedAt   *time.Time `json:"released_at"`
		Sent         int        `json:"sent"`
		SendFailed   int        `json:"send_failed"`
		SendSpreadUS *int64     `json:"send_spread_us"`
		Finished     int        `json:"finished"`
		Failed       int        `json:"failed"`
	} `json:"hot"`
}

// stageNames are how the demo names batch-runner's stages.
var stageNames = map[string]string{"generate": "jobs", "hot": "hot phase"}

// quiet is how long a running stage's line must stand before newer counts are printed: enough
// to show a stage that waits, few enough lines to read.
const quiet = time.Second

// watcher prints a batch's progress: a line when a stage starts, its counts at most once a
// second while they change, and a line when it ends with the counts it ended with. A stage that
// started and ended between two polls gets its end line only.
type watcher struct {
	out       io.Writer
	announced bool
	stages    map[string]*stageSeen
}

type stageSeen struct {
	started, released, ended bool
	printedAt                time.Time
	counts                   string // the running counts last printed
}

func newWatcher(out io.Writer) *watcher {
	return &watcher{out: out, stages: map[string]*stageSeen{}}
}

func (w *watcher) seen(name string) *stageSeen {
	s := w.stages[name]
	if s == nil {
		s = &stageSeen{}
		w.stages[name] = s
	}
	return s
}

// update prints what p adds to what was printed; now is when p was read.
func (w *watcher) update(p progress, now time.Time) {
	if !w.announced && p.Miners > 0 {
		w.announced = true
		fmt.Fprintf(w.out, "batch %d running: %d miners to test\n", p.BatchID, p.Miners)
	}
	for _, s := range p.Stages {
		seen := w.seen(s.Name)
		switch {
		case seen.ended:
		case s.FinishedAt != nil:
			w.end(seen, s, p.Hot.SendSpreadUS, now)
		case s.Name == "hot" && p.Hot.ReleasedAt != nil:
			if !seen.released {
				seen.started = true // the release says more than the start: the frames take ms
				w.released(seen, p.Hot.Sent, p.Hot.SendFailed, p.Hot.SendSpreadUS, now)
				seen.counts = running(s.Name, p)
				break
			}
			w.running(seen, s.Name, p, now)
		case !seen.started:
			seen.started = true
			if line := starting(s.Name, p); line != "" {
				w.line(seen, s.Name, now, "%s", line)
			}
		default:
			w.running(seen, s.Name, p, now)
		}
	}
}

// running prints a running stage's counts when they changed and the last line is a second old.
func (w *watcher) running(seen *stageSeen, name string, p progress, now time.Time) {
	if c := running(name, p); c != "" && c != seen.counts && now.Sub(seen.printedAt) >= quiet {
		w.line(seen, name, now, "%s so far", c)
		seen.counts = c
	}
}

// end prints a stage's end with the counts it ended with (preceded, for a hot phase whose release
// went unseen, by the release).
func (w *watcher) end(seen *stageSeen, s stage, spreadUS *int64, now time.Time) {
	if s.Name == "hot" && !seen.released {
		w.released(seen, s.Counts["sent"], s.Counts["send_failed"], spreadUS, now)
	}
	w.line(seen, s.Name, now, "%s in %s", ended(s.Name, s.Counts), fmtDuration(s.FinishedAt.Sub(s.StartedAt)))
	seen.ended = true
}

// released prints the hot phase's release once.
func (w *watcher) released(seen *stageSeen, sent, failed int, spreadUS *int64, now time.Time) {
	seen.released = true
	line := fmt.Sprintf("sent %d jobs in one release", sent)
	if failed > 0 {
		line = fmt.Sprintf("sent %d of %d jobs in one release", sent, sent+failed)
	}
	if spreadUS != nil {
		line += ", spread " + fmtDuration(time.Duration(*spreadUS)*time.Microsecond)
	}
	w.line(seen, "hot", now, "%s", line)
}

// finish prints the end of every stage the polls did not see end, from the batch as stored:
// the last stages end just before the live record goes.
func (w *watcher) finish(b batch) {
	for _, s := range b.Stages {
		if seen := w.seen(s.Name); !seen.ended && s.FinishedAt != nil {
			w.end(seen, s, b.SendSpreadUS, time.Time{})
		}
	}
}

func (w *watcher) line(seen *stageSeen, stage string, now time.Time, format string, args ...any) {
	name := stage
	if n, ok := stageNames[stage]; ok {
		name = n
	}
	fmt.Fprintf(w.out, "  %-13s %s\n", name, fmt.Sprintf(format, args...))
	seen.printedAt = now
}

// starting is the line a stage starts with; "" for a stage that says nothing until it ends.
func starting(stage string, p progress) string {
	switch stage {
	case "manifests":
		return fmt.Sprintf("asking %d miners for their executors", p.Miners)
	case "availability":
		return fmt.Sprintf("offering %d jobs, staggered by executor class spin-up", p.Executors)
	case "hot":
		return fmt.Sprintf("preparing %d job requests", p.Hot.Jobs)
	}
	return ""
}

// running is a stage's counts while it runs; "" when it has none.
func running(stage string, p progress) string {
	switch stage {
	case "manifests":
		return fmt.Sprintf("%d/%d miners", p.Manifests.Received, p.Miners) + failedPart(p.Manifests.Failed, "without a manifest")
	case "availability":
		a := p.Availability
		return fmt.Sprintf("%d accepted, %d declined, %d ready", a.Accepted, a.Declined, a.Ready)
	case "hot":
		h := p.Hot
		return fmt.Sprintf("%d/%d answered (%d finished, %d failed)", h.Finished+h.Failed, h.Sent, h.Finished, h.Failed)
	}
	return ""
}

// ended is what a stage ended with, from the counts batch-runner keeps with it.
func ended(stage string, c map[string]int) string {
	switch stage {
	case "manifests":
		return fmt.Sprintf("%d/%d miners", c["received"], c["miners"]) + failedPart(c["failed"], "without a manifest")
	case "generate":
		return fmt.Sprintf("%d executors to test, a job each,", c["executors"])
	case "availability":
		parts := []string{fmt.Sprintf("%d accepted", c["accepted"]), fmt.Sprintf("%d declined", c["declined"])}
		if n := c["no_response"]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d no answer", n))
		}
		ready := fmt.Sprintf("%d ready", c["ready"])
		if n := c["not_ready"]; n > 0 {
			ready += fmt.Sprintf(", %d not ready", n)
		}
		return strings.Join(parts, ", ") + "; " + ready
	case "hot":
		silent := max(0, c["sent"]-c["finished"]-c["failed"])
		return fmt.Sprintf("%d finished, %d failed, %d no answer", c["finished"], c["failed"], silent)
	}
	return "done"
}

func failedPart(n int, what string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d %s)", n, what)
}

// fmtDuration prints a span the way it reads best: milliseconds below a second (one decimal
// below 10 ms), seconds with two decimals above.
func fmtDuration(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
