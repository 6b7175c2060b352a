// Command batch-demo drives one synthetic batch end to end over the services' HTTP APIs: it asks
// miner-sync to sync, waits for miners, enqueues a batch on batch-runner, prints each stage as it
// starts and ends with its counts (from batch-runner's live progress), then a summary with the top
// scores from scorer. It exits 1 when the batch failed.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"time"

	"drover.dev/shared/apiclient"
	"drover.dev/shared/batchwatch"
	"drover.dev/shared/tracing"
)

// client calls the services. Its actions (POST) are spans of the demo's trace, when the demo
// traces; its polling (GET) is not, so the trace shows the batch rather than the waiting.
type client struct{ api, poll apiclient.Client }

// call sends a request and decodes a 2xx answer into out; other statuses are errors.
func (c *client) call(ctx context.Context, method, url string, out any) (int, error) {
	if method == http.MethodGet {
		return c.poll.Do(ctx, method, url, nil, out)
	}
	return c.api.Do(ctx, method, url, nil, out)
}

type batch struct {
	ID           int64              `json:"id"`
	State        string             `json:"state"`
	Error        *string            `json:"error"`
	Miners       int                `json:"miners"`
	SendSpreadUS *int64             `json:"send_spread_us"`
	Counts       map[string]int     `json:"counts"`
	Reasons      map[string]int     `json:"reasons"`
	Stages       []batchwatch.Stage `json:"stages"`
}

func main() {
	minerSync := flag.String("miner-sync-url", "http://127.0.0.1:8081", "miner-sync base URL")
	runner := flag.String("batch-runner-url", "http://127.0.0.1:8082", "batch-runner base URL")
	scorer := flag.String("scorer-url", "http://127.0.0.1:8083", "scorer base URL")
	token := flag.String("token", os.Getenv("API_TOKEN"), "bearer token for the /v1 APIs")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	stopTracing, err := tracing.Start(ctx, "batch-demo", slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "batch-demo: tracing off:", err)
	}
	c := &client{
		api:  apiclient.Client{Token: *token, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: tracing.Transport(nil)}},
		poll: apiclient.Client{Token: *token, HTTP: &http.Client{Timeout: 30 * time.Second}},
	}
	err = tracing.Do(ctx, "batch-demo", "batch demo", func(ctx context.Context) error { return demo(ctx, c, *minerSync, *runner, *scorer) })
	flush, cancelFlush := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelFlush()
	_ = stopTracing(flush)
	if err != nil {
		fmt.Fprintln(os.Stderr, "batch-demo:", err)
		os.Exit(1) //nolint:gocritic // the deferred cancels have nothing left to do
	}
}

func demo(ctx context.Context, c *client, minerSync, runner, scorer string) error {
	if _, err := c.call(ctx, http.MethodPost, minerSync+"/v1/sync", nil); err != nil {
		return err
	}
	if err := waitMiners(ctx, c, minerSync); err != nil {
		return err
	}
	var created struct {
		JobID int64 `json:"job_id"`
	}
	if _, err := c.call(ctx, http.MethodPost, runner+"/v1/batches", &created); err != nil {
		return err
	}
	fmt.Printf("batch enqueued (run_batch job %d)\n", created.JobID)
	b, err := follow(ctx, c, runner, created.JobID)
	if err != nil {
		return err
	}
	summary(b)
	topScores(ctx, c, scorer, b.ID)
	if b.State != "done" {
		return fmt.Errorf("batch %d %s: %s", b.ID, b.State, deref(b.Error))
	}
	return nil
}

func waitMiners(ctx context.Context, c *client, base string) error {
	for {
		var page apiclient.Page[json.RawMessage]
		if _, err := c.call(ctx, http.MethodGet, base+"/v1/miners?limit=1", &page); err == nil && len(page.Items) > 0 {
			fmt.Println("miner-sync lists miners")
			return nil
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return errors.New("no miners listed by miner-sync in time")
		}
	}
}

// follow prints the live progress of job jobID's batch from batch-runner's
// GET /v1/batches/current (phase 2 writes nothing to the database, so that is the only account of
// a batch in flight) until the batch is written, and returns the batch as stored.
func follow(ctx context.Context, c *client, base string, jobID int64) (batch, error) {
	w := batchwatch.New(os.Stdout)
	for {
		var p batchwatch.Progress
		status, err := c.call(ctx, http.MethodGet, base+"/v1/batches/current", &p)
		switch {
		case err == nil && p.JobID == jobID:
			w.Update(p, time.Now())
		case err != nil && status != http.StatusNotFound:
			return batch{}, err
		default: // not started yet, or written: the batch row says which
			b, done, err := finished(ctx, c, base, jobID)
			if err != nil || done {
				w.Finish(b.Stages, b.SendSpreadUS)
				return b, err
			}
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return batch{}, fmt.Errorf("waiting for the batch of job %d: %w", jobID, err)
		}
	}
}

// finished returns the batch of job jobID once it is no longer running.
func finished(ctx context.Context, c *client, base string, jobID int64) (batch, bool, error) {
	var page apiclient.Page[batch]
	if _, err := c.call(ctx, http.MethodGet, fmt.Sprintf("%s/v1/batches?job_id=%d", base, jobID), &page); err != nil {
		return batch{}, false, err
	}
	if len(page.Items) == 0 || page.Items[0].State == "running" {
		return batch{}, false, nil
	}
	var full batch
	_, err := c.call(ctx, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, page.Items[0].ID), &full)
	return full, true, err
}

func summary(b batch) {
	fmt.Printf("batch %d %s: %d miners\n", b.ID, b.State, b.Miners)
	fmt.Printf("  executors by outcome: completed %d, excused %d, failed %d\n", b.Counts["completed"], b.Counts["excused"], b.Counts["failed"])
	reasons := make([]string, 0, len(b.Reasons))
	for r := range b.Reasons {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Printf("    %-16s %d\n", r, b.Reasons[r])
	}
	if b.SendSpreadUS != nil {
		fmt.Printf("  send spread: %d µs (max after-send − min before-send)\n", *b.SendSpreadUS)
	}
}

// batchScores is the part of scorer's GET /v1/batches/{id}/scores the demo prints.
type batchScores struct {
	Peak   bool         `json:"peak"`
	Miners []minerScore `json:"miners"`
}

type minerScore struct {
	Hotkey    string       `json:"hotkey"`
	Score     float64      `json:"score"`
	Weight    float64      `json:"weight"`
	WeightU16 int          `json:"weight_u16"`
	Classes   []classScore `json:"classes"`
}

type classScore struct {
	ExecutorClass string `json:"executor_class"`
	Executors     int    `json:"executors"`
	Completed     int    `json:"completed"`
	Excused       int    `json:"excused"`
	Failed        int    `json:"failed"`
}

// topScores prints scorer's five best; scorer may not serve scores yet, which is not an error.
func topScores(ctx context.Context, c *client, base string, id int64) {
	var scores batchScores
	deadline := time.Now().Add(15 * time.Second)
	for {
		status, err := c.call(ctx, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d/scores", base, id), &scores)
		if err == nil {
			break
		}
		if status != http.StatusNotFound || time.Now().After(deadline) || sleep(ctx, time.Second) != nil {
			fmt.Println("  scores: not available from scorer:", err)
			return
		}
	}
	printScores(os.Stdout, scores)
}

// printScores writes the five miners with the highest weight and the jobs per executor class.
func printScores(w io.Writer, s batchScores) {
	miners := slices.Clone(s.Miners)
	slices.SortStableFunc(miners, func(a, b minerScore) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(a.Hotkey, b.Hotkey))
	})
	fmt.Fprintf(w, "  scores: %d miners scored (peak %t); top %d by weight:\n", len(s.Miners), s.Peak, min(5, len(miners)))
	fmt.Fprintf(w, "    %-13s %8s %8s %10s\n", "hotkey", "score", "weight", "weight_u16")
	for _, m := range miners[:min(5, len(miners))] {
		fmt.Fprintf(w, "    %-13s %8.4f %8.4f %10d\n", shortKey(m.Hotkey), m.Score, m.Weight, m.WeightU16)
	}
	type totals struct{ executors, completed, excused, failed int }
	byClass := map[string]*totals{}
	for _, m := range s.Miners {
		for _, c := range m.Classes {
			t := byClass[c.ExecutorClass]
			if t == nil {
				t = &totals{}
				byClass[c.ExecutorClass] = t
			}
			t.executors += c.Executors
			t.completed += c.Completed
			t.excused += c.Excused
			t.failed += c.Failed
		}
	}
	fmt.Fprintln(w, "  per class:")
	for _, class := range slices.Sorted(maps.Keys(byClass)) {
		t := byClass[class]
		fmt.Fprintf(w, "    %-22s executors %4d  completed %4d  excused %3d  failed %3d\n", class, t.executors, t.completed, t.excused, t.failed)
	}
}

// shortKey keeps an SS58 hotkey recognisable: its first six and last four characters.
func shortKey(k string) string {
	if len(k) <= 12 {
		return k
	}
	return k[:6] + "…" + k[len(k)-4:]
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
