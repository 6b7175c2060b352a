package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/shared/postgres"
)

// MaxSkippedKept bounds the skipped entries an event records; the count is always exact.
const MaxSkippedKept = 100

// Outcomes of a sync.
const (
	OutcomeOK      = "ok"      // every entry applied
	OutcomePartial = "partial" // applied, some entries skipped
	OutcomeFailed  = "failed"  // nothing applied: the last good list stays
)

// SyncEvent is how one sync went.
type SyncEvent struct {
	ID             int64            `json:"id"`
	At             time.Time        `json:"at"`
	Reason         string           `json:"reason"`
	Outcome        string           `json:"outcome"`
	Source         string           `json:"source"`
	Netuid         *int             `json:"netuid"`
	Block          *int64           `json:"block"`
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
	var id int64
	err := db.QueryRow(ctx, `
		INSERT INTO sync_events (reason, outcome, source, netuid, block, entries, upserted, deactivated, skipped, error, skipped_entries)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		e.Reason, e.Outcome, e.Source, e.Netuid, e.Block, e.Entries, e.Upserted, e.Deactivated,
		e.Skipped, e.Error, kept).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert %s sync event: %w", e.Outcome, err)
	}
	return id, nil
}

// SyncEventList returns up to limit events, newest first, older than id before (all when 0).
func SyncEventList(ctx context.Context, db postgres.DBTX, before int64, limit int) ([]SyncEvent, error) {
	rows, err := db.Query(ctx, `
		SELECT id, at, reason, outcome, source, netuid, block, entries, upserted, deactivated, skipped, error, skipped_entries
		FROM sync_events WHERE ($1 = 0 OR id < $1) ORDER BY id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list sync events: %w", err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SyncEvent])
	if err != nil {
		return nil, fmt.Errorf("read sync events: %w", err)
	}
	return events, nil
}
