package populate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/services/populate-worker/internal/populate/dbsqlc"
)

// settleRiverJobs is the CompleteFunc of a key populate reserved itself (the HTTP path): in the
// transaction that finishes the key, success or error, it deletes the key's populate_make River
// jobs that no River worker has started, so that the River side of the key commits (or rolls
// back) with make's rows and the job's status instead of running later as a no-op. An errored
// key keeps no River job either: it is made again only through reschedule or a forced
// schedule_jobs, which enqueue a new one.
//
// A job a River worker is running is left alone: its reservation attempt finds the key no longer
// scheduled and completes it through its own transaction. SKIP LOCKED keeps this transaction
// from waiting on a River producer that is fetching the job at this instant; such a job then
// runs as a no-op, as a duplicate delivery would.
func (e *Engine) settleRiverJobs(r *reservation) CompleteFunc {
	return func(ctx context.Context, tx pgx.Tx, _ error) error {
		ids, err := riverJobsOfKey(ctx, tx, r.table.Name, r.hash)
		if err != nil {
			return err
		}
		for _, id := range ids {
			_, err := e.river.JobDeleteTx(ctx, tx, id)
			if err != nil && !errors.Is(err, rivertype.ErrJobRunning) && !errors.Is(err, rivertype.ErrNotFound) {
				return fmt.Errorf("delete river job %d of %s/%s: %w", id, r.table.Name, r.hash, err)
			}
		}
		return nil
	}
}

// riverJobsOfKey locks and returns the ids of the key's populate_make River jobs that are still
// waiting to run (RiverJobListWaitingOfKey).
func riverJobsOfKey(ctx context.Context, tx pgx.Tx, table, hash string) ([]int64, error) {
	ids, err := queries.RiverJobListWaitingOfKey(ctx, tx, dbsqlc.RiverJobListWaitingOfKeyParams{TableName: table, KeyHash: hash})
	if err != nil {
		return nil, fmt.Errorf("find river jobs of %s/%s: %w", table, hash, err)
	}
	return ids, nil
}
