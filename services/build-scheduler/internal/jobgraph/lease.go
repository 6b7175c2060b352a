package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
)

// Lease identifies one attempt whose lease has expired.
type Lease struct {
	JobID   int64
	Attempt int
	Token   int64
}

// ExpiredLeases lists attempts whose worker stopped heartbeating and has not reported.
func ExpiredLeases(ctx context.Context, db postgres.DBTX, limit int) ([]Lease, error) {
	rows, err := db.Query(ctx, `
		SELECT id, attempt, lease_token FROM job_graph
		WHERE state IN ('running', 'cancel_pending') AND lease_expires_at < clock_timestamp() AND NOT reported
		ORDER BY lease_expires_at LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list expired leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		var l Lease
		return l, r.Scan(&l.JobID, &l.Attempt, &l.Token)
	})
	if err != nil {
		return nil, fmt.Errorf("list expired leases: %w", err)
	}
	return out, nil
}

// ExpireTx takes a job back from an attempt whose worker is gone: to ready for another attempt,
// to job_failed when it has used all its attempts, or to cancel_complete when it was being
// cancelled. Guarded by the same attempt and token, and by the lease still being expired, so a
// heartbeat or report that won the race keeps the job.
func (g *Graph) ExpireTx(ctx context.Context, tx pgx.Tx, l Lease) (Result, error) {
	var (
		res      Result
		target   string
		workerID *string
		max      int
	)
	err := tx.QueryRow(ctx, `
		UPDATE job_graph j SET
			state = CASE
				WHEN j.state = 'cancel_pending' THEN 'cancel_complete'
				WHEN j.attempt >= j.max_attempts THEN 'job_failed'
				ELSE 'ready' END::job_state,
			error = CASE WHEN j.attempt >= j.max_attempts AND j.state = 'running'
				THEN format('worker lost on all %s attempts', j.max_attempts) END,
			finished_at = CASE WHEN j.state = 'cancel_pending' OR j.attempt >= j.max_attempts THEN clock_timestamp() END,
			lease_token = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
		FROM job_graph old
		WHERE j.id = $1 AND old.id = j.id AND j.attempt = $2 AND j.lease_token = $3
			AND j.state IN ('running', 'cancel_pending') AND j.lease_expires_at < clock_timestamp() AND NOT j.reported
		RETURNING j.group_id, j.target, j.state::text, old.worker_id, j.max_attempts`,
		l.JobID, l.Attempt, l.Token).Scan(&res.GroupID, &target, &res.State, &workerID, &max)
	if errors.Is(err, pgx.ErrNoRows) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("expire lease of job %d attempt %d: %w", l.JobID, l.Attempt, err)
	}
	res.Applied = true
	worker := "unknown"
	if workerID != nil {
		worker = *workerID
	}
	err = addEvent(ctx, tx, &res.GroupID, &l.JobID, EventLeaseExpired,
		"worker %s stopped heartbeating on job %d attempt %d of %d; job is now %s", worker, l.JobID, l.Attempt, max, res.State)
	if err != nil {
		return res, err
	}
	res.GroupState, err = g.consequences(ctx, tx, l.JobID, res.GroupID, target, res.State)
	return res, err
}
