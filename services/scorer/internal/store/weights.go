package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// WeightsLatest returns the latest weights; NotFound when no batch has given any weight yet, with
// the reason the latest scored batch gave none.
func WeightsLatest(ctx context.Context, db postgres.DBTX) (Weights, error) {
	var w Weights
	b, err := queries.BatchWeightedLatest(ctx, db)
	if errors.Is(err, pgx.ErrNoRows) {
		why, err := noWeightsReason(ctx, db)
		if err != nil {
			return w, err
		}
		return w, &problem.Error{Code: problem.NotFound, Detail: "no scored batch gives any weight yet: " + why, Err: problem.ErrNotFound}
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

// noWeightsReason says why the latest scored batch gives no miner a weight. The usual reason is a
// class weighing 0 (upstream's default for always_on.test, the class a simulated fleet offers),
// which a 404 alone does not reveal: the operator reads here which classes, and the setting that
// weighs them.
func noWeightsReason(ctx context.Context, db postgres.DBTX) (string, error) {
	classes, err := queries.BatchScoredLatestClassList(ctx, db)
	if err != nil {
		return "", fmt.Errorf("list classes of the latest scored batch: %w", err)
	}
	if len(classes) == 0 {
		return "no batch with miners is scored yet", nil
	}
	var zero, unscored []string
	for _, c := range classes {
		switch {
		case c.ClassWeight == 0:
			zero = append(zero, c.ExecutorClass)
		case !c.Scored:
			unscored = append(unscored, c.ExecutorClass)
		}
	}
	why := fmt.Sprintf("batch %d, the latest scored", classes[0].BatchID)
	if len(zero) > 0 {
		why += fmt.Sprintf(", tested executor classes that weigh 0 (%s), which SCORER_CLASS_WEIGHTS (class=weight,...) can weigh",
			strings.Join(zero, ", "))
	}
	if len(unscored) > 0 {
		why += fmt.Sprintf("; no executor of %s scored", strings.Join(unscored, ", "))
	}
	return why, nil
}
