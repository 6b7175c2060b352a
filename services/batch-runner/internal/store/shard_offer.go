package store

import (
	"context"
	"fmt"
	"time"

	"drover.dev/shared/postgres"
)

// ShardOfferReady records that the shard knows its jobs at at (its own clock) and is ready to
// make its initial requests, its longest spin-up being maxSpin. A stale attempt gives
// ErrConflict.
func ShardOfferReady(ctx context.Context, db postgres.DBTX, s ShardStarted, at time.Time, maxSpin time.Duration) error {
	tag, err := db.Exec(ctx, `
		UPDATE batch_shards SET offer_ready_at = $4, max_spin_us = $5
		WHERE batch_id = $1 AND shard = $2 AND attempt = $3 AND state = 'running'`,
		s.BatchID, s.Shard, s.Attempt, at, maxSpin.Microseconds())
	if err != nil {
		return fmt.Errorf("mark shard %d of batch %d ready to offer: %w", s.Shard, s.BatchID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("mark shard %d of batch %d attempt %d ready to offer: %w", s.Shard, s.BatchID, s.Attempt, ErrConflict)
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
	var (
		at      *time.Time
		spinUS  *int64
		waiting []int32
	)
	err := db.QueryRow(ctx, `
		SELECT b.offer_at, b.max_spin_us, coalesce((SELECT array_agg(s.shard ORDER BY s.shard) FROM batch_shards s
		        WHERE s.batch_id = b.id AND s.offer_ready_at IS NULL AND s.state IN ('pending', 'running')), '{}')
		FROM batches b WHERE b.id = $1`, batchID).Scan(&at, &spinUS, &waiting)
	if err != nil {
		return nil, nil, fmt.Errorf("offer instant of batch %d: %w", batchID, mapErr(err))
	}
	if at == nil || spinUS == nil {
		return nil, waiting, nil
	}
	return &Offer{At: *at, MaxSpin: time.Duration(*spinUS) * time.Microsecond}, waiting, nil
}

// OfferFix fixes the batch's stagger, unless it is fixed already: the start at the database's
// now plus margin, the longest spin-up the longest of the shards ready to offer. Of all the
// shards that try, exactly one succeeds, and it alone reports true.
func OfferFix(ctx context.Context, db postgres.DBTX, batchID int64, margin time.Duration) (bool, error) {
	tag, err := db.Exec(ctx, `
		UPDATE batches SET offer_at = clock_timestamp() + make_interval(secs => $2),
		       max_spin_us = (SELECT max(max_spin_us) FROM batch_shards WHERE batch_id = $1 AND offer_ready_at IS NOT NULL)
		WHERE id = $1 AND offer_at IS NULL`, batchID, margin.Seconds())
	if err != nil {
		return false, fmt.Errorf("fix offer instant of batch %d: %w", batchID, err)
	}
	return tag.RowsAffected() == 1, nil
}
