package store

import (
	"context"
	"fmt"
	"time"

	"drover.dev/services/batch-runner/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// ShardOfferReady records that the shard knows its jobs at at (its own clock) and is ready to
// make its initial requests, its longest spin-up being maxSpin. A stale attempt gives
// ErrConflict.
func ShardOfferReady(ctx context.Context, db postgres.DBTX, s ShardStarted, at time.Time, maxSpin time.Duration) error {
	n, err := queries.BatchShardSetOfferReady(ctx, db, dbsqlc.BatchShardSetOfferReadyParams{
		BatchID: s.BatchID, Shard: int32(s.Shard), Attempt: int32(s.Attempt), RiverJobID: new(s.JobID),
		OfferReadyAt: new(at), MaxSpinUs: new(maxSpin.Microseconds()),
	})
	if err != nil {
		return fmt.Errorf("mark shard %d of batch %d ready to offer: %w", s.Shard, s.BatchID, err)
	}
	if n == 0 {
		return fmt.Errorf("mark shard %d of batch %d attempt %d ready to offer: %w", s.Shard, s.BatchID, s.Attempt, ErrLeaseLost)
	}
	return nil
}

// Offer is a batch's agreed stagger: its start and its longest spin-up.
type Offer struct {
	At      time.Time
	MaxSpin time.Duration
}

// OfferState is what a shard ready to offer polls: the agreed stagger once fixed, and the shards
// still expected (pending or running and not ready to offer).
func OfferState(ctx context.Context, db postgres.DBTX, batchID int64) (*Offer, []int32, error) {
	row, err := queries.BatchOfferGet(ctx, db, batchID)
	if err != nil {
		return nil, nil, fmt.Errorf("offer instant of batch %d: %w", batchID, mapErr(err))
	}
	if row.OfferAt == nil || row.MaxSpinUs == nil {
		return nil, row.Waiting, nil
	}
	return &Offer{At: *row.OfferAt, MaxSpin: time.Duration(*row.MaxSpinUs) * time.Microsecond}, row.Waiting, nil
}

// OfferFix fixes the batch's stagger, unless it is fixed already: the start at the database's
// now plus margin, the longest spin-up the longest of the shards ready to offer. Of all the
// shards that try, exactly one succeeds, and it alone reports true.
func OfferFix(ctx context.Context, db postgres.DBTX, batchID int64, margin time.Duration) (bool, error) {
	n, err := queries.BatchOfferFix(ctx, db, dbsqlc.BatchOfferFixParams{ID: batchID, MarginSecs: margin.Seconds()})
	if err != nil {
		return false, fmt.Errorf("fix offer instant of batch %d: %w", batchID, err)
	}
	return n == 1, nil
}
