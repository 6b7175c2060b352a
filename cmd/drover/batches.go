package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"drover.dev/shared/batchwatch"
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
prints each stage as it starts and ends, with its counts and how long it took, and the running
stage's counts as they grow, as make run does; then the batch. It exits 7 when the batch failed,
130 on Ctrl-C (the batch goes on: cancel it with batches cancel).

With --no-follow it prints the batch's id and its run_batch job and returns (-o json:
{"job_id": 13, "batch_id": 4, "duplicate": false}), for batches show or batches cancel; while a
batch waits or runs, that batch, with duplicate true. batch_id is null only when the job has not
started its batch within 10 s (it waits behind a batch another job runs).`,
		Example: "  drover batches run\n  drover batches run --no-follow -o json",
		Args:    exactArgs(0),
		RunE:    func(*cobra.Command, []string) error { return a.runBatch(!noFollow) },
	}
	runCmd.Flags().BoolVar(&noFollow, "no-follow", false, "print the batch and its job and return")
	cancel := &cobra.Command{
		Use: "cancel ID", Short: "Cancel a running batch: it fails, its River job ends cancelled",
		Long: `cancel stops a running batch through River, as River UI's Cancel does, and records who asked:
the batch fails with the error "cancelled through the API (request <id>) while running: …",
naming the request id this prints. It exits 4 when the batch has ended already.`,
		Example: "  drover batches cancel 4", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			raw, err := a.api.call(a.ctx, request{op: opCancelBatch, params: args})
			if err != nil {
				return err
			}
			return a.out.record(raw, cols("batch", "id", "river jobs told to stop", "river_job_ids", "request", "request_id"))
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

// batchCreated is batch-runner's answer to POST /v1/batches: the run_batch job and its batch,
// which is nil when the job had not started it yet.
type batchCreated struct {
	JobID     int64  `json:"job_id"`
	BatchID   *int64 `json:"batch_id"`
	Duplicate bool   `json:"duplicate"`
}

// enqueued says what POST /v1/batches did: which batch, or job, is followed.
func (c batchCreated) enqueued() string {
	switch {
	case c.BatchID != nil && c.Duplicate:
		return fmt.Sprintf("batch %d was already waiting or running: following it (run_batch job %d)", *c.BatchID, c.JobID)
	case c.BatchID != nil:
		return fmt.Sprintf("batch %d enqueued (run_batch job %d)", *c.BatchID, c.JobID)
	case c.Duplicate:
		return fmt.Sprintf("a batch was already waiting or running: following its job %d", c.JobID)
	}
	return fmt.Sprintf("batch enqueued (run_batch job %d)", c.JobID)
}

func (a *app) runBatch(follow bool) error {
	var created batchCreated
	raw, err := a.api.call(a.ctx, request{op: opCreateBatch})
	if err == nil {
		err = json.Unmarshal(raw, &created)
	}
	if err != nil {
		return err
	}
	if !follow {
		return a.out.record(raw, cols("batch", "batch_id", "run_batch job", "job_id", "already waiting or running", "duplicate"))
	}
	w := a.progress()
	fmt.Fprintln(w, created.enqueued())
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

// listedBatch is the part of a batch in GET /v1/batches that followBatch reads.
type listedBatch struct {
	ID     int64          `json:"id"`
	State  string         `json:"state"`
	Miners int            `json:"miners"`
	Counts map[string]any `json:"counts"`
}

// followBatch prints job jobID's batch as it runs, as make run's batch demo does (batchwatch):
// each stage as it starts and ends, with its counts and how long it took, and the running
// stage's counts as they grow, until the batch has ended; it returns the batch's id. Phase 2
// writes nothing to the database, so the stages come from batch-runner's live record while the
// batch runs; the ends no poll saw, as the last stages' are (they end just before the record
// goes), come from the batch as stored.
func (a *app) followBatch(jobID int64, w io.Writer) (int64, error) {
	watch := batchwatch.New(w)
	for {
		var page struct {
			Items []listedBatch `json:"items"`
		}
		q := url.Values{"job_id": {strconv.FormatInt(jobID, 10)}, "limit": {"1"}}
		if err := a.api.get(a.ctx, request{op: opListBatches, query: q}, &page); err != nil {
			return 0, err
		}
		if len(page.Items) > 0 {
			b := page.Items[0]
			watch.Announce(b.ID, b.Miners)
			if b.State != "running" {
				return b.ID, a.endBatch(watch, b, w)
			}
			a.watchCurrent(jobID, watch)
		}
		if err := a.sleep(); err != nil {
			return 0, err
		}
	}
}

// watchCurrent prints what the live record of job jobID's batch adds to what watch printed.
func (a *app) watchCurrent(jobID int64, watch *batchwatch.Watcher) {
	var cur batchwatch.Progress
	err := a.api.get(a.ctx, request{op: opGetCurrentBatch}, &cur)
	if err != nil || cur.JobID != jobID {
		return // 404 between phases, once it ended, or on another replica: the list tells the end
	}
	watch.Update(cur, a.now())
}

// endBatch prints the stage ends of ended batch b that no poll saw, from the batch as stored, and
// how it ended.
func (a *app) endBatch(watch *batchwatch.Watcher, b listedBatch, w io.Writer) error {
	var stored struct {
		Stages       []batchwatch.Stage `json:"stages"`
		SendSpreadUS *int64             `json:"send_spread_us"`
	}
	if err := a.api.get(a.ctx, request{op: opGetBatch, params: []string{strconv.FormatInt(b.ID, 10)}}, &stored); err != nil {
		return err
	}
	watch.Finish(stored.Stages, stored.SendSpreadUS)
	fmt.Fprintf(w, "batch %d %s: jobs %s\n", b.ID, b.State, format(b.Counts))
	return nil
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
