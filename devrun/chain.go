package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// syncEvent is the part of miner-sync's sync event make run prints.
type syncEvent struct {
	Outcome   string  `json:"outcome"`
	Source    string  `json:"source"`
	Block     *int64  `json:"block"`
	BlockHash *string `json:"block_hash"`
	Upserted  int     `json:"upserted"`
	Error     *string `json:"error"`
}

// showSync waits for miner-sync's first sync (it syncs once at start) and prints where the
// miners came from: minersim's Pylon stub, at which block.
func showSync(ctx context.Context, opts options, f *fleet, p *printer) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var page struct {
			Events []syncEvent `json:"events"`
		}
		err := apiCall(ctx, opts, http.MethodGet, f.url("miner-sync")+"/v1/sync/events?limit=1", "", &page)
		if err != nil {
			return err
		}
		if len(page.Events) > 0 {
			e := page.Events[0]
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
