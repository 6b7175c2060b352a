package populaterun

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// TestProgressLine draws a run's progress line at the moments that matter: the bar fills only
// with the keys the run's own makes ended, # made and x failed, so a run whose keys were made
// elsewhere or dropped never shows a full bar and one that made nothing shows no #; the counts say where every key went; the rate is
// always there and the ETA while the run runs, "?" until a key has ended.
func TestProgressLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		run  Run
		want string
	}{
		{"NothingEndedYet",
			Run{ID: 12, State: "running", Total: 200, Remaining: 200},
			"run 12 running [------------------------------]   0% of 200 keys: made 0, 0 failed, 0 made elsewhere, 200 remaining; 0.0 keys/s, eta ?"},
		{"Running",
			Run{ID: 12, State: "running", Total: 200, Made: 38, Errors: 2, Remaining: 160, Rate: 41.5, ETASeconds: ptr(3.86)},
			"run 12 running [#####x------------------------]  20% of 200 keys: made 38, 2 failed, 0 made elsewhere, 160 remaining; 41.5 keys/s, eta 4s"},
		{"RunningLong",
			Run{ID: 4, State: "running", Total: 10000, Made: 100, Remaining: 9900, Rate: 50, ETASeconds: ptr(198.0)},
			"run 4 running [------------------------------]   1% of 10000 keys: made 100, 0 failed, 0 made elsewhere, 9900 remaining; 50.0 keys/s, eta 3m18s"},
		{"Done",
			Run{ID: 12, State: "done", Total: 200, Made: 195, Errors: 5, Rate: 52},
			"run 12 done [#############################x] 100% of 200 keys: made 195, 5 failed, 0 made elsewhere, 0 remaining; 52.0 keys/s"},
		{"AllMadeElsewhere",
			Run{ID: 7, State: "done", Total: 100, MadeElsewhere: 100},
			"run 7 done [------------------------------]   0% of 100 keys: made 0, 0 failed, 100 made elsewhere, 0 remaining; 0.0 keys/s"},
		{"HalfMadeElsewhere",
			Run{ID: 7, State: "running", Total: 100, Made: 25, MadeElsewhere: 50, Remaining: 25, Rate: 12.5, ETASeconds: ptr(2.0)},
			"run 7 running [#######-----------------------]  25% of 100 keys: made 25, 0 failed, 50 made elsewhere, 25 remaining; 12.5 keys/s, eta 2s"},
		{"InterruptedDropped",
			Run{ID: 9, State: "interrupted", Total: 1000, Made: 3, Errors: 1, Dropped: 996, Rate: 2},
			"run 9 interrupted [------------------------------]   0% of 1000 keys: made 3, 1 failed, 0 made elsewhere, 996 dropped, 0 remaining; 2.0 keys/s"},
		{"Skipped",
			Run{ID: 9, State: "done", Total: 10, Made: 8, Skipped: 2, Rate: 4},
			"run 9 done [########################------]  80% of 10 keys: made 8, 0 failed, 0 made elsewhere, 2 skipped, 0 remaining; 4.0 keys/s"},
		{"AllFailed",
			Run{ID: 10, State: "done", Total: 20, Errors: 20, Rate: 10},
			"run 10 done [xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx] 100% of 20 keys: made 0, 20 failed, 0 made elsewhere, 0 remaining; 10.0 keys/s"},
		{"NothingTaken",
			Run{ID: 3, State: "done"},
			"run 3 done [------------------------------]   0% of 0 keys: made 0, 0 failed, 0 made elsewhere, 0 remaining; 0.0 keys/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Line(tc.run)
			require.Equal(t, tc.want, got)
			bar := got[strings.Index(got, "[")+1 : strings.Index(got, "]")]
			require.Len(t, bar, barWidth)
			if tc.run.Made+tc.run.Errors < tc.run.Total || tc.run.Total == 0 {
				require.Contains(t, bar, "-", "a run that did not end every key itself has no full bar")
			}
			if tc.run.Made+tc.run.Errors == 0 {
				require.Equal(t, strings.Repeat("-", barWidth), bar, "a run that ended no key itself has an empty bar")
			}
			if tc.run.Made == 0 {
				require.NotContains(t, bar, "#", "a run that made nothing has no # in its bar")
			}
			if tc.run.Errors == 0 {
				require.NotContains(t, bar, "x", "an x only for a failed key")
			}
			require.Contains(t, got, "keys/s", "the rate is always shown")
			if tc.run.State == "running" {
				require.Regexp(t, `, eta (\?|\S+s)$`, got, "a running run shows its ETA")
			} else {
				require.NotContains(t, got, "eta", "an ended run has no ETA")
			}
		})
	}
}

// TestRunSummary is the line that says how a run ended: its state and what became of its keys,
// or, for a run that took none, that there was nothing to make.
func TestRunSummary(t *testing.T) {
	t.Parallel()
	direct := Run{ID: 5, Table: "lab_stats", State: "done"}
	direct.Options.ReserveJobs = ptr(false)
	for _, tc := range []struct {
		name string
		run  Run
		want string
	}{
		{"Done", Run{ID: 12, Table: "example_signal_stats", State: "done", Total: 200, Made: 195, Errors: 5},
			"populate run 12 of example_signal_stats: done; made 195, 5 failed, 0 made elsewhere"},
		{"MadeNothing", Run{ID: 7, Table: "example_signal_stats", State: "done", Total: 100, MadeElsewhere: 100},
			"populate run 7 of example_signal_stats: done; made 0, 0 failed, 100 made elsewhere"},
		{"Interrupted", Run{ID: 9, Table: "example_signal_stats", State: "interrupted", Total: 1000, Made: 3, Errors: 1, Dropped: 996},
			"populate run 9 of example_signal_stats: interrupted; made 3, 1 failed, 0 made elsewhere, 996 dropped"},
		{"Failed", Run{ID: 10, Table: "example_signal_energy", State: "failed", Total: 20, Errors: 1, Skipped: 2, Dropped: 17},
			"populate run 10 of example_signal_energy: failed; made 0, 1 failed, 0 made elsewhere, 2 skipped, 17 dropped"},
		{"NothingToMake", Run{ID: 3, Table: "example_signal_grade", State: "done"},
			"populate run 3 of example_signal_grade: done; nothing to make: no scheduled key of example_signal_grade matched"},
		{"NothingToMakeDirect", direct, "populate run 5 of lab_stats: done; nothing to make: no missing key of lab_stats matched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Summary(tc.run))
		})
	}
}

// TestFitLine fits a run's progress line to the terminal it is redrawn on: whole when it fits,
// else shorter with as wide a bar as fits, else without a bar, else cut; never as wide as the
// terminal, where it would wrap and each redraw would add a row. Whether a form fits is judged
// by the run's widest line, so that neither the form nor the bar's width changes as it moves.
func TestFitLine(t *testing.T) {
	t.Parallel()
	run := Run{ID: 12, State: "running", Total: 200, Made: 38, Errors: 2, Remaining: 160, Rate: 41.5, ETASeconds: ptr(3.86)}
	done := Run{ID: 7, State: "done", Total: 100, MadeElsewhere: 100}
	for _, tc := range []struct {
		name  string
		run   Run
		width int
		want  string
	}{
		{"Unknown", run, 0, Line(run)},
		{"Wide", run, 150, Line(run)},
		{"ShortFullBar", run, 120, "run 12 [#####x------------------------]  20% made 38, 2 failed, 0 elsewhere, 160 left of 200; 41.5/s, eta 4s"},
		{"ShortNarrowerBar", run, 110, "run 12 [###x-----------------]  20% made 38, 2 failed, 0 elsewhere, 160 left of 200; 41.5/s, eta 4s"},
		{"NoBar", run, 80, "run 12  20% made 38, 2 failed, 0 elsewhere, 160 left of 200; 41.5/s, eta 4s"},
		{"Cut", run, 40, "run 12  20% made 38, 2 failed, 0 elsewh"},
		{"DoneWide", done, 150, Line(done)},
		{"DoneShort", done, 100, "run 7 done [------------]   0% made 0, 0 failed, 100 elsewhere, 0 left of 100; 0.0/s"},
		{"DoneNoBar", done, 90, "run 7 done   0% made 0, 0 failed, 100 elsewhere, 0 left of 100; 0.0/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Fit(tc.run, tc.width)
			require.Equal(t, tc.want, got)
			if tc.width > 0 {
				require.Less(t, len(got), tc.width)
			}
		})
	}

	// As the run moves, its line keeps its form and its bar its width.
	moved := run
	moved.Made, moved.Remaining, moved.Rate, moved.ETASeconds = 150, 48, 120.5, ptr(0.4)
	require.Equal(t, "run 12 [###############------]  76% made 150, 2 failed, 0 elsewhere, 48 left of 200; 120.5/s, eta 0s",
		Fit(moved, 110))
	moved.State, moved.Made, moved.Remaining, moved.ETASeconds = "done", 198, 0, nil
	require.Equal(t, "run 12 done [####################x] 100% made 198, 2 failed, 0 elsewhere, 0 left of 200; 120.5/s",
		Fit(moved, 110))
}
