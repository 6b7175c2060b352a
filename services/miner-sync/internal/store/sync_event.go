package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// MaxSkippedKept bounds the skipped entries an event records; the count is always exact.
const MaxSkippedKept = 100

// Outcome is how a sync went.
type Outcome string

// The sync outcomes.
const (
	OutcomeOK      Outcome = "ok"      // every entry applied
	OutcomePartial Outcome = "partial" // applied, some entries skipped
	OutcomeFailed  Outcome = "failed"  // nothing applied: the last good list stays
)

// Outcomes returns every sync outcome.
func Outcomes() []Outcome { return []Outcome{OutcomeOK, OutcomePartial, OutcomeFailed} }

// SyncEvent is how one sync went.
type SyncEvent struct {
	ID             int64            `json:"id"`
	At             time.Time        `json:"at"`
	Reason         string           `json:"reason"`
	Outcome        Outcome          `json:"outcome"`
	Source         string           `json:"source"`
	Netuid         *int             `json:"netuid"`
	Block          *int64           `json:"block"`
	BlockHash      *string          `json:"block_hash"`
	Entries        int              `json:"entries"`
	Upserted       int              `json:"upserted"`
	Deactivated    int              `json:"deactivated"`
	Skipped        int              `json:"skipped"`
	Error          *string          `json:"error"`
	SkippedEntries []metagraph.Skip `json:"skipped_entries"`
}

// SyncEventInsert records e and returns its id.
func SyncEventInsert(ctx context.Context, db postgres.DBTX, e SyncEvent) (int64, error) {
	kept := e.SkippedEntries
	if len(kept) > MaxSkippedKept {
		kept = kept[:MaxSkippedKept]
	}
	if kept == nil {
		kept = []metagraph.Skip{}
	}
	skipped, err := json.Marshal(kept)
	if err != nil {
		return 0, fmt.Errorf("encode skipped entries of a %s sync event: %w", e.Outcome, err)
	}
	id, err := queries.SyncEventInsert(ctx, db, dbsqlc.SyncEventInsertParams{
		Reason: e.Reason, Outcome: string(e.Outcome), Source: e.Source, Netuid: int32Ptr(e.Netuid), Block: e.Block, BlockHash: e.BlockHash,
		Entries: int32(e.Entries), Upserted: int32(e.Upserted), Deactivated: int32(e.Deactivated),
		Skipped: int32(e.Skipped), Error: e.Error, SkippedEntries: skipped,
	})
	if err != nil {
		return 0, fmt.Errorf("insert %s sync event: %w", e.Outcome, err)
	}
	return id, nil
}

// SyncEventList returns up to limit events, newest first, older than id before (all when 0).
func SyncEventList(ctx context.Context, db postgres.DBTX, before int64, limit int) ([]SyncEvent, error) {
	rows, err := queries.SyncEventList(ctx, db, dbsqlc.SyncEventListParams{Before: before, Max: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list sync events: %w", err)
	}
	events := make([]SyncEvent, len(rows))
	for i, r := range rows {
		events[i] = SyncEvent{
			ID: r.ID, At: r.At, Reason: r.Reason, Outcome: Outcome(r.Outcome), Source: r.Source, Block: r.Block, BlockHash: r.BlockHash,
			Entries: int(r.Entries), Upserted: int(r.Upserted), Deactivated: int(r.Deactivated), Skipped: int(r.Skipped),
			Error: r.Error,
		}
		if r.Netuid != nil {
			events[i].Netuid = new(int(*r.Netuid))
		}
		if err := json.Unmarshal(r.SkippedEntries, &events[i].SkippedEntries); err != nil {
			return nil, fmt.Errorf("read skipped entries of sync event %d: %w", r.ID, err)
		}
	}
	return events, nil
}

// int32Ptr narrows an optional int to the column's width.
func int32Ptr(v *int) *int32 {
	if v == nil {
		return nil
	}
	return new(int32(*v))
}
