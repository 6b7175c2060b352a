package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// Lease identifies one attempt whose lease has expired.
type Lease struct {
	JobID   int64
	Attempt int
	Token   int64
}

// ExpiredLeases lists attempts whose worker stopped heartbeating and has not reported. Workers
// now apply their reports in the transaction that ends their token, so no running job is marked
// reported any more; the check stays for reports queued as build_report jobs by workers of
// earlier releases, which marked the job when they queued it.
func ExpiredLeases(ctx context.Context, db postgres.DBTX, limit int) ([]Lease, error) {
	rows, err := queries.JobListExpiredLeases(ctx, db, int32(limit))
	if err != nil {
		return nil, fmt.Errorf("list expired leases: %w", err)
	}
	out := make([]Lease, 0, len(rows))
	for _, r := range rows {
		if r.LeaseToken != nil { // a running job always has one
			out = append(out, Lease{JobID: r.ID, Attempt: int(r.Attempt), Token: *r.LeaseToken})
		}
	}
	return out, nil
}

// ExpireTx takes a job back from an attempt whose worker is gone: to ready for another attempt,
// to job_failed when it has used all its attempts, or to cancel_complete when it was being
// cancelled. Guarded by the same attempt and token, and by the lease still being expired, so a
// heartbeat or report that won the race keeps the job.
func (g *Graph) ExpireTx(ctx context.Context, tx pgx.Tx, l Lease) (Result, error) {
	var res Result
	row, err := queries.JobExpire(ctx, tx, dbsqlc.JobExpireParams{ID: l.JobID, Attempt: int32(l.Attempt), LeaseToken: l.Token})
	if errors.Is(err, pgx.ErrNoRows) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("expire lease of job %d attempt %d: %w", l.JobID, l.Attempt, err)
	}
	res.Applied, res.GroupID, res.State = true, row.GroupID, JobState(row.State)
	worker := "unknown"
	if row.WorkerID != nil {
		worker = *row.WorkerID
	}
	err = addEvent(ctx, tx, &res.GroupID, &l.JobID, EventLeaseExpired,
		"worker %s stopped heartbeating on job %d attempt %d of %d; job is now %s", worker, l.JobID, l.Attempt, row.MaxAttempts, res.State)
	if err != nil {
		return res, err
	}
	res.GroupState, err = g.consequences(ctx, tx, readyJob{id: l.JobID, groupID: res.GroupID, name: row.Name, target: row.Target}, res.State)
	return res, err
}
