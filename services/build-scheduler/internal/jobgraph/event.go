package jobgraph

import (
	"context"
	"fmt"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// EventKind names what a system event is about.
type EventKind string

// The event kinds.
const (
	EventAttemptLost EventKind = "attempt_lost"
	EventJobFailed   EventKind = "job_failed"
	EventStalled     EventKind = "group_stalled"
	EventNoWorkers   EventKind = "target_without_workers"
	EventDrift       EventKind = "counter_drift"
	EventSettled     EventKind = "group_settled"
	EventCanceled    EventKind = "group_canceled"
	// EventRiverUIAction records what a press of River UI's Retry or Cancel on a job of the
	// build_scheduler schema did, once its worker acted on it.
	EventRiverUIAction EventKind = "river_ui_action"
)

// addEvent records a system event on db, in the transaction of the decision it explains.
func addEvent(ctx context.Context, db postgres.DBTX, groupID, jobID *int64, kind EventKind, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	err := queries.SystemEventInsert(ctx, db, dbsqlc.SystemEventInsertParams{GroupID: groupID, JobID: jobID, Kind: string(kind), Message: msg})
	if err != nil {
		return fmt.Errorf("record %s event: %w", kind, err)
	}
	return nil
}

// RecordAction records, on db, what a River UI button pressed on one of the service's River jobs
// did, for the group and job it concerns (nil: system-wide, no job). Transitions that a button
// causes record it themselves (RerunTx, a cancelled build's report).
func RecordAction(ctx context.Context, db postgres.DBTX, groupID, jobID *int64, format string, args ...any) error {
	return addEvent(ctx, db, groupID, jobID, EventRiverUIAction, format, args...)
}

// Events returns the latest events of a group, newest first; groupID 0 means system-wide events.
func Events(ctx context.Context, db postgres.DBTX, groupID int64, limit int) ([]Event, error) {
	rows, err := queries.SystemEventList(ctx, db, dbsqlc.SystemEventListParams{GroupID: groupID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list events of group %d: %w", groupID, err)
	}
	var out []Event
	for _, r := range rows {
		out = append(out, Event{ID: r.ID, GroupID: r.GroupID, JobID: r.JobID, Kind: EventKind(r.Kind), Message: r.Message, CreatedAt: r.CreatedAt})
	}
	return out, nil
}
