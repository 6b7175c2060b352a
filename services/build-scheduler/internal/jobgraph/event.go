package jobgraph

import (
	"context"
	"fmt"

	"drover.dev/shared/postgres"
)

// Event kinds.
const (
	EventLeaseExpired = "lease_expired"
	EventJobFailed    = "job_failed"
	EventStalled      = "group_stalled"
	EventNoWorkers    = "target_without_workers"
	EventDrift        = "counter_drift"
	EventSettled      = "group_settled"
	EventCanceled     = "group_canceled"
)

// addEvent records a system event on db, in the transaction of the decision it explains.
func addEvent(ctx context.Context, db postgres.DBTX, groupID, jobID *int64, kind, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	_, err := db.Exec(ctx, `INSERT INTO system_events (group_id, job_id, kind, message) VALUES ($1, $2, $3, $4)`,
		groupID, jobID, kind, msg)
	if err != nil {
		return fmt.Errorf("record %s event: %w", kind, err)
	}
	return nil
}

// Events returns the latest events of a group, newest first; groupID 0 means system-wide events.
func Events(ctx context.Context, db postgres.DBTX, groupID int64, limit int) ([]Event, error) {
	rows, err := db.Query(ctx, `
		SELECT id, group_id, job_id, kind, message, created_at FROM system_events
		WHERE ($1 = 0 OR group_id = $1) ORDER BY id DESC LIMIT $2`, groupID, limit)
	if err != nil {
		return nil, fmt.Errorf("list events of group %d: %w", groupID, err)
	}
	var out []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.ID, &e.GroupID, &e.JobID, &e.Kind, &e.Message, &e.CreatedAt); err != nil {
			return nil, fmt.Errorf("scan event: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
