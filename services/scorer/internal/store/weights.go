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
	b, err := queries.BatchWeightedLatest(ctx, db)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, fmt.Errorf("weights: no scored batch gives any weight yet: %w", problem.ErrNotFound)
	}
	if err != nil {
		return w, fmt.Errorf("find latest weighted batch: %w", err)
	}
	w.BatchID, w.StartedAt, w.Peak = b.ID, b.StartedAt, b.Peak
	rows, err := queries.MinerWeightList(ctx, db, w.BatchID)
	if err != nil {
		return w, fmt.Errorf("get weights of batch %d: %w", w.BatchID, err)
	}
	w.Weights = make([]MinerWeight, len(rows))
	for i, r := range rows {
		w.Weights[i] = MinerWeight{Hotkey: r.Hotkey, Weight: r.Weight, WeightU16: int(r.WeightU16)}
		w.TotalU16 += int(r.WeightU16)
	}
	return w, nil
}
