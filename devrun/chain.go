package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// syncEvent is the part of miner-sync's sync event make run prints.
type syncEvent struct {
	At        time.Time `json:"at"`
	Outcome   string    `json:"outcome"`
	Source    string    `json:"source"`
	Block     *int64    `json:"block"`
	BlockHash *string   `json:"block_hash"`
	Upserted  int       `json:"upserted"`
	Error     *string   `json:"error"`
}

// showSync waits for miner-sync's first sync of this run (it syncs once at start) and prints
// where the miners came from: minersim's Pylon stub, at which block. A sync an earlier make run
// recorded on the same database does not count: its miners' ports are the earlier fleet's.
func showSync(ctx context.Context, opts options, f *fleet, p *printer) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var page struct {
			Items []syncEvent `json:"items"` // a page of miner-sync's list, newest first
		}
		err := apiCall(ctx, opts, http.MethodGet, f.url("miner-sync")+"/v1/sync/events?limit=1", "", &page)
		if err != nil {
			return err
		}
		if len(page.Items) > 0 && !page.Items[0].At.Before(p.start) {
			e := page.Items[0]
			if e.Outcome == "failed" {
				p.fail("miner-sync could not sync from %s: %s", e.Source, deref(e.Error))
				return fmt.Errorf("metagraph sync failed: %s", deref(e.Error))
			}
			p.ok("miner-sync synced %d neurons from %s at block %d (%s)", e.Upserted, e.Source, deref(e.Block), deref(e.BlockHash))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("miner-sync recorded no sync within 30s")
}

func deref[T any](v *T) T {
	var zero T
	if v == nil {
		return zero
	}
	return *v
}

// weightsSet is one weights request minersim's Pylon stub accepted.
type weightsSet struct {
	Identity string             `json:"identity"`
	Block    int64              `json:"block"`
	Weights  map[string]float64 `json:"weights"`
}

// submission is the part of scorer's record of a weight-setting attempt make run prints.
type submission struct {
	BatchID   *int64  `json:"batch_id"`
	Outcome   string  `json:"outcome"`
	Block     *int64  `json:"block"`
	BlockHash *string `json:"block_hash"`
	Weights   []any   `json:"weights"`
	Error     *string `json:"error"`
}

// showWeights waits for scorer's attempt to set the batch's weights through minersim's Pylon
// stub and prints what the stub received, and scorer's record of the attempt. An attempt the
// subnet's rate limit skipped is no failure: on a database an earlier make run used, the weights
// it sent less than the limit's blocks ago hold the next back, as the chain would.
func showWeights(ctx context.Context, opts options, f *fleet, p *printer) error {
	var latest struct {
		BatchID int64 `json:"batch_id"`
	}
	if err := apiCall(ctx, opts, http.MethodGet, f.url("scorer")+"/v1/weights", "", &latest); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sub, err := batchSubmission(ctx, opts, f, latest.BatchID)
		if err != nil {
			return err
		}
		switch {
		case sub == nil:
		case sub.Outcome == "sent":
			return showSet(ctx, p, sub)
		case sub.Outcome == "skipped" && strings.HasPrefix(deref(sub.Error), "rate limit"):
			p.ok("scorer kept the subnet's rate limit at block %d: %s", deref(sub.Block), deref(sub.Error))
			p.info("  weights sent less than the limit ago (by an earlier make run on this database: the simulated chain's blocks follow the wall clock) hold these back, as the chain would; the periodic set_weights sends them once the limit has passed")
			return nil
		default:
			p.fail("scorer did not set batch %d's weights: %s, %s (see GET /v1/weights/submissions)", latest.BatchID, sub.Outcome, deref(sub.Error))
			return fmt.Errorf("weights not set: %s", deref(sub.Error))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	p.fail("scorer made no attempt to set batch %d's weights within 30s (see GET /v1/weights/submissions)", latest.BatchID)
	return errors.New("no weights set through Pylon")
}

// batchSubmission returns scorer's latest attempt to set batch's weights; nil when none yet.
func batchSubmission(ctx context.Context, opts options, f *fleet, batch int64) (*submission, error) {
	var page struct {
		Items []submission `json:"items"` // newest first
	}
	if err := apiCall(ctx, opts, http.MethodGet, f.url("scorer")+"/v1/weights/submissions?limit=10", "", &page); err != nil {
		return nil, err
	}
	for i, s := range page.Items {
		if deref(s.BatchID) == batch {
			return &page.Items[i], nil
		}
	}
	return nil, nil
}

// showSet prints the weights minersim's Pylon stub received last and scorer's record of sending them.
func showSet(ctx context.Context, p *printer, sub *submission) error {
	var sets []weightsSet
	if err := getJSON(ctx, pylonURL+"/weights-sets", &sets); err != nil {
		return err
	}
	if len(sets) == 0 {
		p.fail("scorer recorded the weights sent, but minersim's Pylon has none")
		return errors.New("no weights set through Pylon")
	}
	last := sets[len(sets)-1]
	p.ok("weights set through minersim's Pylon for identity %q at block %d: %d hotkeys", last.Identity, last.Block, len(last.Weights))
	for _, line := range topWeights(last.Weights, 5) {
		p.info("  %s", line)
	}
	p.info("scorer's record: %s, %d uids mapped at block %d (%s)", sub.Outcome, len(sub.Weights), deref(sub.Block), deref(sub.BlockHash))
	return nil
}

// topWeights lists the n largest weights, largest first, as "hotkey weight" lines.
func topWeights(weights map[string]float64, n int) []string {
	keys := make([]string, 0, len(weights))
	for k := range weights {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if weights[keys[i]] != weights[keys[j]] {
			return weights[keys[i]] > weights[keys[j]]
		}
		return keys[i] < keys[j]
	})
	lines := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		lines = append(lines, fmt.Sprintf("%s %.4f", k, weights[k]))
	}
	return lines
}

func getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
