package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/batch-runner/internal/store/dbsqlc"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/postgres"
)

// BatchLeaseRenew extends the lease of attempt s to lease from now. An attempt that lost it (a
// takeover handed the batch to another job, or the attempt ended) gets ErrLeaseLost.
func BatchLeaseRenew(ctx context.Context, db postgres.DBTX, s Started, lease time.Duration) error {
	n, err := queries.BatchLeaseRenew(ctx, db, dbsqlc.BatchLeaseRenewParams{
		ID: s.ID, Attempt: int32(s.Attempt), LeaseJobID: s.JobID, LeaseSecs: lease.Seconds(),
	})
	if err != nil {
		return fmt.Errorf("renew lease of batch %d attempt %d: %w", s.ID, s.Attempt, err)
	}
	if n == 0 {
		return fmt.Errorf("renew lease of batch %d attempt %d (run_batch job %d): %w", s.ID, s.Attempt, s.JobID, ErrLeaseLost)
	}
	return nil
}

// ShardLeaseRenew extends the lease of shard attempt s as BatchLeaseRenew does a batch's.
func ShardLeaseRenew(ctx context.Context, db postgres.DBTX, s ShardStarted, lease time.Duration) error {
	n, err := queries.BatchShardLeaseRenew(ctx, db, dbsqlc.BatchShardLeaseRenewParams{
		BatchID: s.BatchID, Shard: int32(s.Shard), Attempt: int32(s.Attempt), RiverJobID: new(s.JobID), LeaseSecs: lease.Seconds(),
	})
	if err != nil {
		return fmt.Errorf("renew lease of shard %d of batch %d attempt %d: %w", s.Shard, s.BatchID, s.Attempt, err)
	}
	if n == 0 {
		return fmt.Errorf("renew lease of shard %d of batch %d attempt %d (run_batch_shard job %d): %w", s.Shard, s.BatchID, s.Attempt, s.JobID, ErrLeaseLost)
	}
	return nil
}

// ExpiredLease is a running batch, or a running shard of one (Shard set), whose lease ran out:
// its process died, or has not reached the database for a whole lease.
type ExpiredLease struct {
	BatchID int64
	Shard   *int
	Attempt int
	// JobID is the River job that held the lease.
	JobID int64
	Until time.Time
	// ShardArgs are the encoded args of a shard's job, which the job taking it over repeats.
	ShardArgs []byte
}

// ExpiredLeases lists the running batches and shards whose lease ran out, batches first.
func ExpiredLeases(ctx context.Context, db postgres.DBTX) ([]ExpiredLease, error) {
	batches, err := queries.BatchLeaseExpiredList(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("list expired batch leases: %w", err)
	}
	shards, err := queries.BatchShardLeaseExpiredList(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("list expired shard leases: %w", err)
	}
	out := make([]ExpiredLease, 0, len(batches)+len(shards))
	for _, b := range batches {
		out = append(out, ExpiredLease{BatchID: b.ID, Attempt: int(b.Attempt), JobID: b.LeaseJobID, Until: b.LeaseUntil})
	}
	for _, s := range shards {
		out = append(out, ExpiredLease{
			BatchID: s.BatchID, Shard: new(int(s.Shard)), Attempt: int(s.Attempt), JobID: s.RiverJobID, Until: s.LeaseUntil, ShardArgs: s.Args,
		})
	}
	return out, nil
}

// LeaseTakeOver hands the batch or shard of l, in tx, to the River job newJobID that tx has
// inserted, with a fresh lease, and records event on it (as the dead attempt's). It reports false,
// having changed nothing, when the lease is no longer the one l saw expired (renewed, or another
// replica took the batch over first); tx must then be rolled back, with the job it inserted.
func LeaseTakeOver(ctx context.Context, tx pgx.Tx, l ExpiredLease, newJobID int64, lease time.Duration, event sysevent.Event) (bool, error) {
	var n int64
	var err error
	if l.Shard == nil {
		n, err = queries.BatchLeaseTakeOver(ctx, tx, dbsqlc.BatchLeaseTakeOverParams{
			ID: l.BatchID, Attempt: int32(l.Attempt), LeaseJobID: l.JobID, NewLeaseJobID: newJobID, LeaseSecs: lease.Seconds(),
		})
	} else {
		n, err = queries.BatchShardLeaseTakeOver(ctx, tx, dbsqlc.BatchShardLeaseTakeOverParams{
			BatchID: l.BatchID, Shard: int32(*l.Shard), Attempt: int32(l.Attempt), RiverJobID: new(l.JobID),
			NewRiverJobID: new(newJobID), LeaseSecs: lease.Seconds(),
		})
	}
	if err != nil || n == 0 {
		if err != nil {
			err = fmt.Errorf("take batch %d over from job %d: %w", l.BatchID, l.JobID, err)
		}
		return false, err
	}
	return true, eventsWrite(ctx, tx, l.BatchID, l.Attempt, l.Shard, []sysevent.Event{event})
}
