package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

var batchColumns = cols("id", "id", "state", "state", "miners", "miners", "created", "created_at",
	"finished", "finished_at", "spread us", "send_spread_us", "jobs", "counts")

var batchFields = cols("id", "id", "state", "state", "reason", "reason", "attempt", "attempt",
	"river job", "river_job_id", "miners", "miners", "created", "created_at", "finished", "finished_at",
	"send spread µs", "send_spread_us", "jobs by outcome", "counts", "by reason", "reasons", "error", "error")

func (a *app) batchesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batches",
		Short: "List, show, run and cancel synthetic batches (batch-runner)",
		Example: `  drover batches list --limit 5
  drover batches show 3
  drover batches run
  drover batches cancel 4`,
	}
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "Batches, newest first", Args: exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			raw, err := a.api.call(a.ctx, request{op: opListBatches, query: limitQuery(limit)})
			if err != nil {
				return err
			}
			return a.out.list(raw, batchColumns)
		},
	}
	list.Flags().IntVar(&limit, "limit", 20, "most batches to list (1 to 1000)")
	show := &cobra.Command{
		Use: "show ID", Short: "One batch: its stages with timings and counts, outcomes, send spread",
		Example: "  drover batches show 3\n  drover batches show 3 -o json | jq '.jobs[] | select(.outcome != \"completed\")'",
		Args:    exactArgs(1),
		RunE:    func(_ *cobra.Command, args []string) error { return a.showBatch(args[0]) },
	}
	var noFollow bool
	runCmd := &cobra.Command{
		Use:   "run",
		Short: "Run a batch now and follow it stage by stage until it ends",
		Long: `run enqueues a batch (at most one waits or runs: while one does, that one is followed) and
prints each stage as it starts and ends, with its counts, as make run does; then the batch. It
exits 7 when the batch failed, 130 on Ctrl-C (the batch goes on: cancel it with batches cancel).`,
		Example: "  drover batches run\n  drover batches run --no-follow -o json",
		Args:    exactArgs(0),
		RunE:    func(*cobra.Command, []string) error { return a.runBatch(!noFollow) },
	}
	runCmd.Flags().BoolVar(&noFollow, "no-follow", false, "print the enqueued job and return")
	cancel := &cobra.Command{
		Use: "cancel ID", Short: "Cancel a running batch: it fails, its River job ends cancelled",
		Example: "  drover batches cancel 4", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			raw, err := a.api.call(a.ctx, request{op: opCancelBatch, params: args})
			if err != nil {
				return err
			}
			return a.out.record(raw, cols("batch", "id", "river jobs told to stop", "river_job_ids"))
		},
	}
	cmd.AddCommand(list, show, runCmd, cancel)
	return cmd
}

func limitQuery(limit int) url.Values {
	return url.Values{"limit": {strconv.Itoa(limit)}}
}

func (a *app) showBatch(id string) error {
	raw, err := a.api.call(a.ctx, request{op: opGetBatch, params: []string{id}})
	if err != nil || a.out.json {
		if err == nil {
			err = a.out.raw(raw)
		}
		return err
	}
	if err := a.out.record(raw, batchFields); err != nil {
		return err
	}
	var b struct {
		Stages []map[string]any `json:"stages"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return err
	}
	for _, s := range b.Stages {
		s["took"] = took(s["started_at"], s["finished_at"])
	}
	fmt.Fprintln(a.out.w)
	a.out.table(b.Stages, cols("stage", "name", "started", "started_at", "took", "took", "counts", "counts"))
	return nil
}

// took is the time between two RFC 3339 times, or "-".
func took(from, to any) string {
	f, ok1 := from.(string)
	t, ok2 := to.(string)
	if !ok1 || !ok2 {
		return "-"
	}
	ft, err1 := time.Parse(time.RFC3339Nano, f)
	tt, err2 := time.Parse(time.RFC3339Nano, t)
	if err1 != nil || err2 != nil {
		return "-"
	}
	return tt.Sub(ft).Round(time.Millisecond).String()
}

// progress is where a command that follows something prints its progress: stdout for people,
// stderr when stdout carries JSON.
func (a *app) progress() io.Writer {
	if a.out.json {
		return a.stderr
	}
	return a.out.w
}

func (a *app) runBatch(follow bool) error {
	var created struct {
		JobID     int64 `json:"job_id"`
		Duplicate bool  `json:"duplicate"`
	}
	raw, err := a.api.call(a.ctx, request{op: opCreateBatch})
	if err == nil {
		err = json.Unmarshal(raw, &created)
	}
	if err != nil {
		return err
	}
	if !follow {
		return a.out.record(raw, cols("run_batch job", "job_id", "already waiting or running", "duplicate"))
	}
	w := a.progress()
	if created.Duplicate {
		fmt.Fprintf(w, "a batch was already waiting or running: following its job %d\n", created.JobID)
	} else {
		fmt.Fprintf(w, "batch enqueued (run_batch job %d)\n", created.JobID)
	}
	id, err := a.followBatch(created.JobID, w)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := a.showBatch(strconv.FormatInt(id, 10)); err != nil {
		return err
	}
	var b struct {
		State string  `json:"state"`
		Error *string `json:"error"`
	}
	if err := a.api.get(a.ctx, request{op: opGetBatch, params: []string{strconv.FormatInt(id, 10)}}, &b); err != nil {
		return err
	}
	if b.State != "done" {
		return unsuccessful(fmt.Errorf("batch %d %s", id, b.State))
	}
	return nil
}

// stageSeen is what followBatch has printed of a stage.
type stageSeen struct{ started, finished bool }

// followBatch prints the stages of job's batch as they start and end, from batch-runner's
// in-memory progress, until the batch has ended; it returns the batch's id. The batch's row
// exists before it knows its miners (batch-runner records them once phase 1 has read them), so
// the batch is announced, and its stages followed, once it counts some miners or has ended.
func (a *app) followBatch(jobID int64, w io.Writer) (int64, error) {
	seen := map[string]*stageSeen{}
	announced := false
	for {
		var page struct {
			Items []struct {
				ID     int64          `json:"id"`
				State  string         `json:"state"`
				Miners int            `json:"miners"`
				Counts map[string]any `json:"counts"`
			} `json:"items"`
		}
		q := url.Values{"job_id": {strconv.FormatInt(jobID, 10)}, "limit": {"1"}}
		if err := a.api.get(a.ctx, request{op: opListBatches, query: q}, &page); err != nil {
			return 0, err
		}
		if len(page.Items) > 0 {
			b := page.Items[0]
			if !announced && (b.Miners > 0 || b.State != "running") {
				fmt.Fprintf(w, "batch %d running: %d miners to test\n", b.ID, b.Miners)
				announced = true
			}
			if b.State != "running" {
				fmt.Fprintf(w, "batch %d %s: jobs %s\n", b.ID, b.State, format(b.Counts))
				return b.ID, nil
			}
			if announced {
				a.printStages(jobID, seen, w)
			}
		}
		if err := a.sleep(); err != nil {
			return 0, err
		}
	}
}

// printStages prints the stages of the batch in flight that started or ended since last time.
func (a *app) printStages(jobID int64, seen map[string]*stageSeen, w io.Writer) {
	var cur struct {
		JobID  int64 `json:"job_id"`
		Stages []struct {
			Name       string         `json:"name"`
			FinishedAt *string        `json:"finished_at"`
			StartedAt  string         `json:"started_at"`
			Counts     map[string]any `json:"counts"`
		} `json:"stages"`
	}
	err := a.api.get(a.ctx, request{op: opGetCurrentBatch}, &cur)
	if err != nil || cur.JobID != jobID {
		return // 404 between phases or once it ended; the list tells the end
	}
	for _, s := range cur.Stages {
		st := seen[s.Name]
		if st == nil {
			st = &stageSeen{}
			seen[s.Name] = st
		}
		if !st.started {
			fmt.Fprintf(w, "  %-13s started\n", s.Name)
			st.started = true
		}
		if s.FinishedAt != nil && !st.finished {
			fmt.Fprintf(w, "  %-13s done in %s: %s\n", s.Name, took(s.StartedAt, *s.FinishedAt), format(s.Counts))
			st.finished = true
		}
	}
}

// sleep waits one poll, or returns the exit for Ctrl-C.
func (a *app) sleep() error {
	select {
	case <-a.ctx.Done():
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: %w", a.ctx.Err())}
	case <-time.After(a.poll):
		return nil
	}
}
