// Package populaterun draws a populate run's progress and says how it ended, one way for every
// client that follows a run (drover populate, make run's populate demo):
//
//	run 12 running [#####x------------------------]  20% of 200 keys: made 38, 2 failed, 0 made elsewhere, 160 remaining; 41.5 keys/s, eta 4s
//	populate run 12 of example_signal_stats: done; made 195, 5 failed, 0 made elsewhere
//
// The bar fills with the keys the run's own makes ended over the keys it took, # for each made and
// x for each failed, so it is never full for a run whose keys were made elsewhere or dropped, and
// holds no # for a run that made nothing.
package populaterun

import (
	"fmt"
	"strings"
	"time"
)

// Run is a populate run as GET /v1/populate-runs/{id} shows it, what its progress is drawn from.
type Run struct {
	ID    int64  `json:"id"`
	Table string `json:"table"`
	State string `json:"state"`
	// Total is the keys the run took; Made and Errors those its own makes ended; MadeElsewhere
	// those another make (another run's, or a background make already running) made; Skipped
	// those that needed no make; Dropped those a stopped run never started; Remaining the rest.
	Total         int64    `json:"total"`
	Made          int64    `json:"made"`
	Errors        int64    `json:"errors"`
	MadeElsewhere int64    `json:"made_elsewhere"`
	Skipped       int64    `json:"skipped"`
	Dropped       int64    `json:"dropped"`
	Remaining     int64    `json:"remaining"`
	Rate          float64  `json:"rate"`
	ETASeconds    *float64 `json:"eta_seconds"`
	Options       struct {
		ReserveJobs *bool `json:"reserve_jobs"`
	} `json:"options"`
}

// barWidth is the progress bar's width in characters.
const barWidth = 30

// Line is one line of a run's progress: its state, a bar filled with the keys the run's
// own makes ended over the keys it took (# made, x failed), so a run whose keys were made
// elsewhere or dropped never shows a full bar, then the counts, the rate and, while it runs, the ETA ("eta
// ?" until a key has ended):
//
//	run 12 running [#####x------------------------]  20% of 200 keys: made 38, 2 failed, 0 made elsewhere, 160 remaining; 41.5 keys/s, eta 4s
func Line(r Run) string {
	line := fmt.Sprintf("run %d %s %s %3d%% of %d keys: %s, %d remaining; %.1f keys/s", r.ID, r.State,
		bar(r, barWidth), percent(r), r.Total, counts(r), r.Remaining, r.Rate)
	if r.State == "running" {
		line += ", eta " + eta(r.ETASeconds)
	}
	return line
}

// shortLine is the progress line in fewer columns, for a narrow terminal, with a bar width
// columns wide (none when 0), and the state once the run has ended:
//
//	run 12 [#####x--------------]  20% made 38, 2 failed, 0 elsewhere, 160 left of 200; 41.5/s, eta 4s
func shortLine(r Run, width int) string {
	head := fmt.Sprintf("run %d ", r.ID)
	if r.State != "running" {
		head += r.State + " "
	}
	if width > 0 {
		head += bar(r, width) + " "
	}
	line := fmt.Sprintf("%s%3d%% %s, %d left of %d; %.1f/s", head, percent(r), countsAs(r, "elsewhere"), r.Remaining, r.Total, r.Rate)
	if r.State == "running" {
		line += ", eta " + eta(r.ETASeconds)
	}
	return line
}

// minBarWidth is the narrowest bar a terminal's progress line is drawn with; narrower, it goes.
const minBarWidth = 10

// Fit is run's progress line for a terminal width columns wide (0: unknown), which a line
// redrawn in place must stay short of, lest it wrap and each redraw add a row: Line when
// it fits, else shortLine with as wide a bar as fits, else without a bar, cut if it must be.
// Whether a form fits is judged by the run's widest line (its counts as wide as its total), so
// the form and the bar's width stay put while the run moves.
func Fit(r Run, width int) string {
	if width <= 0 {
		return Line(r)
	}
	w := widest(r)
	if line := Line(r); len(Line(w)) < width && len(line) < width {
		return line
	}
	if bw := min(barWidth, width-1-len(shortLine(w, 0))-3); bw >= minBarWidth { // the bar's [ ] and a space
		if line := shortLine(r, bw); len(line) < width {
			return line
		}
	}
	line := shortLine(r, 0)
	if len(line) < width {
		return line
	}
	return line[:max(0, width-1)]
}

// widest is running r with every count as wide as its total, a rate of at least 999.9 keys/s
// and an ETA of 59m59s: as wide as r's progress line gets while it runs, and once it has ended
// (its state then takes the ETA's place), unless it is slower or faster than that.
func widest(r Run) Run {
	w := r
	w.State = "running"
	w.Made, w.Errors, w.MadeElsewhere, w.Remaining = r.Total, r.Total, r.Total, r.Total
	if r.Skipped > 0 {
		w.Skipped = r.Total
	}
	if r.Dropped > 0 {
		w.Dropped = r.Total
	}
	w.Rate = max(r.Rate, 999.9)
	eta := 59*60 + 59.0
	w.ETASeconds = &eta
	return w
}

// bar is a bar width columns wide between brackets, filled over the keys the run took with a
// # for the keys its own makes made, then an x for those they failed: a run that made nothing
// has no #, however many of its keys failed.
func bar(r Run, width int) string {
	made, ended := 0, 0
	if r.Total > 0 {
		made = int(min(r.Made, r.Total) * int64(width) / r.Total)
		ended = int(min(r.Made+r.Errors, r.Total) * int64(width) / r.Total)
	}
	return "[" + strings.Repeat("#", made) + strings.Repeat("x", ended-made) + strings.Repeat("-", width-ended) + "]"
}

// percent is the keys the run's own makes ended over the keys it took, in percent, rounded
// down: 100 only once every key was made or failed by the run itself.
func percent(r Run) int64 {
	if r.Total == 0 {
		return 0
	}
	return min(r.Made+r.Errors, r.Total) * 100 / r.Total
}

// eta is a run's ETA to the second, "?" while unknown.
func eta(seconds *float64) string {
	if seconds == nil {
		return "?"
	}
	return time.Duration(*seconds * float64(time.Second)).Round(time.Second).String()
}

// counts says what became of a run's keys: "made 195, 5 failed, 0 made elsewhere", with the
// skipped and dropped keys when there are any.
func counts(r Run) string { return countsAs(r, "made elsewhere") }

// countsAs is counts with the keys made elsewhere named elsewhere.
func countsAs(r Run, elsewhere string) string {
	s := fmt.Sprintf("made %d, %d failed, %d %s", r.Made, r.Errors, r.MadeElsewhere, elsewhere)
	if r.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", r.Skipped)
	}
	if r.Dropped > 0 {
		s += fmt.Sprintf(", %d dropped", r.Dropped)
	}
	return s
}

// Summary is how a run ended, in a line:
//
//	populate run 12 of example_signal_stats: done; made 195, 5 failed, 0 made elsewhere
//
// or, for a run that took no key, "populate run 13 of T: done; nothing to make: no scheduled
// key of T matched".
func Summary(r Run) string {
	head := fmt.Sprintf("populate run %d of %s: %s; ", r.ID, r.Table, r.State)
	if r.Total == 0 {
		which := "scheduled"
		if r.Options.ReserveJobs != nil && !*r.Options.ReserveJobs {
			which = "missing"
		}
		return head + fmt.Sprintf("nothing to make: no %s key of %s matched", which, r.Table)
	}
	return head + counts(r)
}
