package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"drover.dev/shared/populaterun"
)

var runColumns = cols("id", "id", "table", "table", "state", "state", "total", "total", "made", "made",
	"errors", "errors", "elsewhere", "made_elsewhere", "remaining", "remaining", "rate/s", "rate", "created", "created_at",
	"finished", "finished_at")

var runFields = cols("id", "id", "table", "table", "state", "state", "stopping", "stopping", "keys taken", "total",
	"made", "made", "errors", "errors", "made elsewhere", "made_elsewhere", "skipped", "skipped", "dropped", "dropped",
	"remaining", "remaining", "rate/s", "rate", "eta s", "eta_seconds", "created", "created_at", "finished", "finished_at")

var populateJobColumns = cols("table", "table_name", "key hash", "key_hash", "status", "status", "key", "key",
	"error", "error_message", "at", "timestamp")

// populateCmds are the computed-table commands, each at the top level as DataJoint names them.
func (a *app) populateCmds() []*cobra.Command {
	return []*cobra.Command{a.tablesCmd(), a.populateCmd(), a.runsCmd(), a.errorsCmd(), a.scheduleCmd(),
		a.jobActionCmd("reschedule", opRescheduleJob, "Schedule an error or ignore job again"),
		a.jobActionCmd("ignore", opIgnoreJob, "Mark a key's job ignore: the table's populate skips it")}
}

// restrictionFlag parses --restrict k=v into the populate restriction: an integer, a number,
// true/false or else a string; repeating a column makes a list of values (any of them).
func restriction(pairs []string) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--restrict %q: want column=value", p)
		}
		var value any = v
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			value = n
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			value = f
		} else if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
			value = b
		}
		switch prev := out[k].(type) {
		case nil:
			out[k] = value
		case []any:
			out[k] = append(prev, value)
		default:
			out[k] = []any{prev, value}
		}
	}
	return out, nil
}

func (a *app) populateCmd() *cobra.Command {
	var restrict []string
	var maxCalls, processes int
	var suppress, noFollow bool
	var order string
	var minInterval time.Duration
	c := &cobra.Command{
		Use:   "populate TABLE",
		Short: "Make a table's missing keys in a populate run, with a progress bar; Ctrl-C cancels the run",
		Long: `populate starts a populate run (DataJoint's populate) on TABLE's missing keys, restricted by
--restrict on key columns, and follows it with a progress bar until it ends: the bar fills with
the keys the run's own makes ended (made or failed) over the keys it took, beside the counts made,
failed, made elsewhere (by another run's make, or a background make already running when the run
reached the key) and remaining, the rate and the ETA; then a line says how it ended. On a terminal the bar is redrawn
in place; elsewhere (a log, a pipe) it is a line at most every second. Ctrl-C cancels the run,
as DataJoint's does: it takes no more keys, its running makes are recorded as
KeyboardInterrupt, and drover exits 130 once the run has ended. It exits 7 when the run failed
or any key errored.`,
		Example: `  drover populate example_signal_stats
  drover populate example_signal_stats --restrict signal_id=3 --restrict signal_id=4 --max-calls 10
  drover populate example_signal_energy --suppress-errors --processes 4 --no-follow -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := restriction(restrict)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			body := map[string]any{"restriction": r, "suppress_errors": suppress, "processes": processes}
			if maxCalls > 0 {
				body["max_calls"] = maxCalls
			}
			if order != "" {
				body["order"] = order
			}
			if cmd.Flags().Changed("min-scheduling-interval") {
				body["min_scheduling_interval"] = minInterval.Seconds()
			}
			raw, err := a.api.call(a.ctx, request{op: opPopulateTable, params: args, body: body})
			if err != nil {
				return err
			}
			if noFollow {
				return a.out.record(raw, runFields)
			}
			var run struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(raw, &run); err != nil {
				return err
			}
			return a.followRun(strconv.FormatInt(run.ID, 10))
		},
	}
	c.Flags().StringArrayVar(&restrict, "restrict", nil, "key column=value; repeat for more columns or values")
	c.Flags().IntVar(&maxCalls, "max-calls", 0, "make at most this many keys (0: all)")
	c.Flags().IntVar(&processes, "processes", 1, "makes of this run at once")
	c.Flags().BoolVar(&suppress, "suppress-errors", false, "go on past a failed make")
	c.Flags().StringVar(&order, "order", "", "original, reverse or random")
	c.Flags().BoolVar(&noFollow, "no-follow", false, "print the started run and return")
	c.Flags().DurationVar(&minInterval, "min-scheduling-interval", 0,
		"schedule_jobs before the run unless the table was scheduled less than this ago (default: the worker's MIN_SCHEDULING_INTERVAL; 0 always schedules)")
	return c
}

// progressEvery is how often, at most, a followed run's progress is printed as a line of its own
// where it cannot be redrawn (a log, a pipe); a terminal's bar is redrawn at every poll.
const progressEvery = time.Second

// followRun draws the run's progress bar until it ends, then says how it ended; Ctrl-C cancels
// the run and waits for it to end. On a terminal the bar is one line redrawn at each poll;
// elsewhere it is a line at most every progressEvery, and the last one.
func (a *app) followRun(id string) error {
	w := a.progress()
	interrupted := false
	ctx := a.ctx
	var last string
	var lastAt time.Time
	drawn := 0 // columns of the line on the terminal, which the next one wipes out
	for {
		var run populaterun.Run
		raw, err := a.api.call(context.WithoutCancel(ctx), request{op: opGetPopulateRun, params: []string{id}})
		if err == nil {
			err = json.Unmarshal(raw, &run)
		}
		if err != nil {
			return err
		}
		line := populaterun.Line(run)
		ended := run.State != "running"
		switch now := a.now(); {
		case a.terminal:
			if a.width != nil {
				line = populaterun.Fit(run, a.width())
			}
			fmt.Fprintf(w, "\r%s%s", line, strings.Repeat(" ", max(0, drawn-len(line))))
			drawn = len(line)
		case line != last && (last == "" || ended || now.Sub(lastAt) >= progressEvery):
			fmt.Fprintln(w, line)
			last, lastAt = line, now
		}
		if ended {
			if a.terminal {
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, populaterun.Summary(run))
			if a.out.json {
				_ = a.out.raw(raw)
			} else {
				a.printRunErrors(raw)
			}
			switch {
			case interrupted:
				return &exitError{code: exitInterrupted, err: fmt.Errorf("populate run %s cancelled: %s", id, run.State)}
			case run.State != "done" || run.Errors > 0:
				return unsuccessful(fmt.Errorf("populate run %s %s with %d errors", id, run.State, run.Errors))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				fmt.Fprintf(w, "\ncancelling populate run %s\n", id)
				drawn = 0
				cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				_, err := a.api.call(cancelCtx, request{op: opCancelPopulateRun, params: []string{id}})
				cancel()
				if err != nil {
					return err
				}
			}
			time.Sleep(a.poll)
		case <-time.After(a.poll):
		}
	}
}

// printRunErrors lists an ended run's failed keys.
func (a *app) printRunErrors(raw []byte) {
	var run struct {
		ErrorList []map[string]any `json:"error_list"`
	}
	if json.Unmarshal(raw, &run) != nil || len(run.ErrorList) == 0 {
		return
	}
	a.out.table(run.ErrorList, cols("key hash", "key_hash", "key", "key", "error", "error_message"))
}

func (a *app) runsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "runs", Short: "List, show, follow and cancel populate runs",
		Example: "  drover runs list --table example_signal_stats\n  drover runs show 4\n  drover runs cancel 4",
	}
	var limit int
	var table, state string
	list := &cobra.Command{
		Use: "list", Short: "Populate runs, newest first", Args: exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			q := limitQuery(limit)
			if table != "" {
				q.Set("table", table)
			}
			if state != "" {
				q.Set("state", state)
			}
			raw, err := a.api.call(a.ctx, request{op: opListPopulateRuns, query: q})
			if err != nil {
				return err
			}
			return a.out.list(raw, runColumns)
		},
	}
	list.Flags().IntVar(&limit, "limit", 20, "most runs to list (1 to 1000)")
	list.Flags().StringVar(&table, "table", "", "only this table's runs")
	list.Flags().StringVar(&state, "state", "", "only runs in this state: running, done, interrupted, failed")
	show := &cobra.Command{
		Use: "show ID", Short: "A run: state, counts, rate, ETA and its failed keys", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			raw, err := a.api.call(a.ctx, request{op: opGetPopulateRun, params: args})
			if err != nil {
				return err
			}
			if err := a.out.record(raw, runFields); err == nil && !a.out.json {
				fmt.Fprintln(a.out.w)
				a.printRunErrors(raw)
			}
			return err
		},
	}
	follow := &cobra.Command{
		Use: "follow ID", Short: "Follow a run with a progress bar; Ctrl-C cancels it", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return a.followRun(args[0]) },
	}
	cancel := &cobra.Command{
		Use: "cancel ID", Short: "Cancel a run: it takes no more keys; an ended run is shown unchanged", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			raw, err := a.api.call(a.ctx, request{op: opCancelPopulateRun, params: args})
			if err != nil {
				return err
			}
			return a.out.record(raw, runFields)
		},
	}
	cmd.AddCommand(list, show, follow, cancel)
	return cmd
}

func (a *app) errorsCmd() *cobra.Command {
	var limit int
	var status string
	c := &cobra.Command{
		Use: "errors TABLE", Short: "A table's errored keys from the jobs table, with their messages", Args: exactArgs(1),
		Example: "  drover errors example_signal_stats\n  drover errors example_signal_stats --status ignore",
		RunE: func(_ *cobra.Command, args []string) error {
			q := limitQuery(limit)
			q.Set("table", args[0])
			q.Set("status", status)
			raw, err := a.api.call(a.ctx, request{op: opListJobs, query: q})
			if err != nil {
				return err
			}
			return a.out.list(raw, populateJobColumns)
		},
	}
	c.Flags().IntVar(&limit, "limit", 100, "most keys to list (1 to 1000)")
	c.Flags().StringVar(&status, "status", "error", "jobs of this status: error, ignore, reserved, scheduled, success")
	return c
}

func (a *app) scheduleCmd() *cobra.Command {
	var force bool
	var restrict []string
	c := &cobra.Command{
		Use: "schedule TABLE", Short: "schedule_jobs: schedule a table's missing keys (rate limited)", Args: exactArgs(1),
		Example: "  drover schedule example_signal_stats\n  drover schedule example_signal_stats --force --restrict signal_id=3",
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := restriction(restrict)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			raw, err := a.api.call(a.ctx, request{op: opScheduleJobs, params: args, body: map[string]any{"force": force, "restriction": r}})
			if err != nil {
				return err
			}
			return a.out.record(raw, cols("scheduled", "scheduled", "suppressed by the rate limit", "suppressed"))
		},
	}
	c.Flags().BoolVar(&force, "force", false, "reschedule error and ignore keys too")
	c.Flags().StringArrayVar(&restrict, "restrict", nil, "key column=value; repeat for more columns or values")
	return c
}

func (a *app) jobActionCmd(verb string, op operation, short string) *cobra.Command {
	return &cobra.Command{
		Use: verb + " TABLE KEY_HASH", Short: short, Args: exactArgs(2),
		Example: fmt.Sprintf("  drover %s example_signal_stats 3f2c…  # the key hash drover errors shows", verb),
		RunE: func(_ *cobra.Command, args []string) error {
			raw, err := a.api.call(a.ctx, request{op: op, params: args})
			if err != nil {
				return err
			}
			return a.out.record(raw, cols("table", "table_name", "key hash", "key_hash", "status", "status", "key", "key"))
		},
	}
}
