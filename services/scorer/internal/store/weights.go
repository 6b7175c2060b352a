package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// Weights are the weights to set on chain, from the latest scored batch that gives any miner a
// weight (a batch in which every miner failed, or with no miners, has nothing to set and would
// otherwise zero the subnet's weights).
type Weights struct {
	BatchID   int64         `json:"batch_id"`
	StartedAt time.Time     `json:"started_at"`
	Peak      bool          `json:"peak"`
	TotalU16  int           `json:"total_u16"`
	Weights   []MinerWeight `json:"weights"`
}

// MinerWeight is one hotkey's weight: a share of 1, and the same in u16 (summing to 65535).
type MinerWeight struct {
	Hotkey    string  `json:"hotkey"`
	Weight    float64 `json:"weight"`
	WeightU16 int     `json:"weight_u16"`
}

// WeightsLatest returns the latest weights; NotFound when no batch has given any weight yet.
func WeightsLatest(ctx context.Context, db postgres.DBTX) (Weights, error) {
	var w Weights
	err := db.QueryRow(ctx, `
		SELECT b.id, b.started_at, b.peak FROM batches b
		WHERE b.scored_at IS NOT NULL
		  AND EXISTS (SELECT FROM miner_scores m WHERE m.batch_id = b.id AND m.weight_u16 > 0)
		ORDER BY b.started_at DESC, b.id DESC LIMIT 1`).Scan(&w.BatchID, &w.StartedAt, &w.Peak)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, fmt.Errorf("weights: no scored batch gives any weight yet: %w", problem.ErrNotFound)
	}
	if err != nil {
		return w, fmt.Errorf("find latest weighted batch: %w", err)
	}
	rows, err := db.Query(ctx, `
		SELECT hotkey, weight, weight_u16 FROM miner_scores
		WHERE batch_id = $1 AND weight > 0 ORDER BY hotkey`, w.BatchID)
	if err != nil {
		return w, fmt.Errorf("get weights of batch %d: %w", w.BatchID, err)
	}
	w.Weights, err = pgx.CollectRows(rows, pgx.RowToStructByPos[MinerWeight])
	if err != nil {
		return w, fmt.Errorf("read weights of batch %d: %w", w.BatchID, err)
	}
	for _, mw := range w.Weights {
		w.TotalU16 += mw.WeightU16
	}
	return w, nil
}
