package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"drover.dev/shared/postgres"
)

// Shard is one shard's row, as GET /v1/batches/{id} shows it.
type Shard struct {
	Shard      int        `json:"shard"`
	State      ShardState `json:"state"`
	Attempt    int        `json:"attempt"`
	RiverJobID *int64     `json:"river_job_id"`
	Miners     int        `json:"miners"`
	Error      *string    `json:"error"`
	// OfferReadyAt is when the shard knew its jobs, on its own clock; MaxSpinUS its longest
	// spin-up, which the batch's stagger covers.
	OfferReadyAt *time.Time `json:"offer_ready_at"`
	MaxSpinUS    *int64     `json:"max_spin_us"`
	// ReadyAt is when the shard's executors were ready and its frames built, on its own clock;
	// ClockSkewUS is the database's clock minus the shard's when it said so.
	ReadyAt     *time.Time `json:"ready_at"`
	ClockSkewUS *int64     `json:"clock_skew_us"`
	// ReleasedAt is when the shard opened its gate, on its own clock; ReleaseLagUS is that minus
	// the batch's agreed send_at; SendSpreadUS is the shard's own send spread.
	ReleasedAt   *time.Time      `json:"released_at"`
	ReleaseLagUS *int64          `json:"release_lag_us"`
	SendSpreadUS *int64          `json:"send_spread_us"`
	Stages       json.RawMessage `json:"stages"`
	StartedAt    *time.Time      `json:"started_at"`
	FinishedAt   *time.Time      `json:"finished_at"`
}

// ShardList returns a batch's shards in order; none for a batch run in one process.
func ShardList(ctx context.Context, db postgres.DBTX, batchID int64) ([]Shard, error) {
	rows, err := queries.BatchShardList(ctx, db, batchID)
	if err != nil {
		return nil, fmt.Errorf("list shards of batch %d: %w", batchID, err)
	}
	out := make([]Shard, len(rows))
	for i, r := range rows {
		out[i] = Shard{
			Shard: int(r.Shard), State: ShardState(r.State), Attempt: int(r.Attempt), RiverJobID: r.RiverJobID, Miners: int(r.Miners),
			Error: r.Error, OfferReadyAt: r.OfferReadyAt, MaxSpinUS: r.MaxSpinUs, ReadyAt: r.ReadyAt, ClockSkewUS: r.ClockSkewUs,
			ReleasedAt: r.ReleasedAt, SendSpreadUS: r.SendSpreadUs, Stages: r.Stages,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		}
		if r.ReleasedAt != nil && r.BatchSendAt != nil {
			out[i].ReleaseLagUS = new(r.ReleasedAt.Sub(*r.BatchSendAt).Microseconds())
		}
	}
	return out, nil
}
