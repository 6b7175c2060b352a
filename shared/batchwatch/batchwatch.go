// Package batchwatch prints a synthetic batch's progress, stage by stage, from what batch-runner
// serves: its live record (GET /v1/batches/current) while the batch runs and the batch as stored
// (GET /v1/batches/{id}) once it has ended. make run's batch demo and drover batches run both
// print through it, so an operator following a batch sees what make run shows.
package batchwatch

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Stage is one of a batch's stages, live or as stored: its span and the counts it ended with.
type Stage struct {
	Name       string         `json:"name"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	Counts     map[string]int `json:"counts"`
}

// Progress is the part of batch-runner's GET /v1/batches/current a Watcher prints: the stages so
// far and the counts of the running one.
type Progress struct {
	BatchID   int64   `json:"batch_id"`
	JobID     int64   `json:"job_id"`
	Stages    []Stage `json:"stages"`
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

// stageNames are how a Watcher names batch-runner's stages.
var stageNames = map[string]string{"generate": "jobs", "hot": "hot phase"}

// quiet is how long a running stage's line must stand before newer counts are printed: enough
// to show a stage that waits, few enough lines to read.
const quiet = time.Second

// Watcher prints a batch's progress: the batch once it knows its miners, a line when a stage
// starts, its counts at most once a second while they change, and a line when it ends with the
// counts it ended with and how long it took. A stage that started and ended between two polls
// gets its end line only; Finish prints the ends that no poll saw.
type Watcher struct {
	out       io.Writer
	announced bool
	stages    map[string]*stageSeen
}

type stageSeen struct {
	started, released, ended bool
	printedAt                time.Time
	counts                   string // the running counts last printed
}

// New returns a Watcher that prints to out.
func New(out io.Writer) *Watcher {
	return &Watcher{out: out, stages: map[string]*stageSeen{}}
}

func (w *Watcher) seen(name string) *stageSeen {
	s := w.stages[name]
	if s == nil {
		s = &stageSeen{}
		w.stages[name] = s
	}
	return s
}

// Announce prints, once, that batch id runs with miners to test, when miners is known (not 0):
// batch-runner creates the batch row before it has read the miners.
func (w *Watcher) Announce(id int64, miners int) {
	if !w.announced && miners > 0 {
		w.announced = true
		fmt.Fprintf(w.out, "batch %d running: %d miners to test\n", id, miners)
	}
}

// Update prints what p adds to what was printed; now is when p was read.
func (w *Watcher) Update(p Progress, now time.Time) {
	w.Announce(p.BatchID, p.Miners)
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

// Finish prints the end of every stage the polls did not see end, from the batch as stored (its
// stages and send spread): the last stages end just before the live record goes.
func (w *Watcher) Finish(stages []Stage, sendSpreadUS *int64) {
	for _, s := range stages {
		if seen := w.seen(s.Name); !seen.ended && s.FinishedAt != nil {
			w.end(seen, s, sendSpreadUS, time.Time{})
		}
	}
}

// running prints a running stage's counts when they changed and the last line is a second old.
func (w *Watcher) running(seen *stageSeen, name string, p Progress, now time.Time) {
	if c := running(name, p); c != "" && c != seen.counts && now.Sub(seen.printedAt) >= quiet {
		w.line(seen, name, now, "%s so far", c)
		seen.counts = c
	}
}

// end prints a stage's end with the counts it ended with (preceded, for a hot phase whose release
// went unseen, by the release).
func (w *Watcher) end(seen *stageSeen, s Stage, spreadUS *int64, now time.Time) {
	if s.Name == "hot" && !seen.released {
		w.released(seen, s.Counts["sent"], s.Counts["send_failed"], spreadUS, now)
	}
	w.line(seen, s.Name, now, "%s in %s", ended(s.Name, s.Counts), FormatDuration(s.FinishedAt.Sub(s.StartedAt)))
	seen.ended = true
}

// released prints the hot phase's release once.
func (w *Watcher) released(seen *stageSeen, sent, failed int, spreadUS *int64, now time.Time) {
	seen.released = true
	line := fmt.Sprintf("sent %d jobs in one release", sent)
	if failed > 0 {
		line = fmt.Sprintf("sent %d of %d jobs in one release", sent, sent+failed)
	}
	if spreadUS != nil {
		line += ", spread " + FormatDuration(time.Duration(*spreadUS)*time.Microsecond)
	}
	w.line(seen, "hot", now, "%s", line)
}

func (w *Watcher) line(seen *stageSeen, stage string, now time.Time, format string, args ...any) {
	name := stage
	if n, ok := stageNames[stage]; ok {
		name = n
	}
	fmt.Fprintf(w.out, "  %-13s %s\n", name, fmt.Sprintf(format, args...))
	seen.printedAt = now
}

// starting is the line a stage starts with; "" for a stage that says nothing until it ends.
func starting(stage string, p Progress) string {
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
func running(stage string, p Progress) string {
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

// FormatDuration prints a span the way it reads best: milliseconds below a second (one decimal
// below 10 ms), seconds with two decimals above.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
