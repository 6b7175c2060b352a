package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/problem"
)

// CancelTx cancels a group: jobs that have not started are cancelled at once (cancel_complete),
// running ones become cancel_pending so their workers kill the process on the next heartbeat and
// report. The group is canceled when nothing runs any more. Cancelling a canceled group again is
// a no-op; a group that completed or failed cannot be cancelled (ErrConflict).
func (g *Graph) CancelTx(ctx context.Context, tx pgx.Tx, groupID int64, reason string) (string, error) {
	state, err := groupState(ctx, tx, groupID)
	if err != nil || state == GroupCanceled {
		return state, err
	}
	if state == GroupComplete || state == GroupFailed {
		return state, fmt.Errorf("cancel group %d: it is already %s: %w", groupID, state, problem.ErrConflict)
	}
	tag, err := tx.Exec(ctx, `
		WITH open AS MATERIALIZED (
			SELECT id FROM job_graph WHERE group_id = $1 AND state IN ('pending', 'waiting_on_dependency', 'ready', 'running')
			ORDER BY id FOR UPDATE
		)
		UPDATE job_graph j SET
			state = CASE WHEN j.state = 'running' THEN 'cancel_pending' ELSE 'cancel_complete' END::job_state,
			finished_at = CASE WHEN j.state = 'running' THEN NULL ELSE clock_timestamp() END,
			updated_at = clock_timestamp()
		FROM open WHERE j.id = open.id AND j.state IN ('pending', 'waiting_on_dependency', 'ready', 'running')`, groupID)
	if err != nil {
		return "", fmt.Errorf("cancel jobs of group %d: %w", groupID, err)
	}
	if err := recountShards(ctx, tx, groupID); err != nil {
		return "", err
	}
	var running int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM job_graph WHERE group_id = $1 AND state = 'cancel_pending'`, groupID).Scan(&running)
	if err != nil {
		return "", fmt.Errorf("count cancelling jobs of group %d: %w", groupID, err)
	}
	if err := addEvent(ctx, tx, &groupID, nil, EventCanceled, "%s; %d jobs cancelled, %d running jobs told to stop",
		reason, int(tag.RowsAffected())-running, running); err != nil {
		return "", err
	}
	err = tx.QueryRow(ctx, `
		UPDATE groups SET cancel_requested = true, remaining = $2, updated_at = clock_timestamp(),
			state = CASE WHEN $2 = 0 THEN 'canceled' ELSE state END::group_state,
			finished_at = CASE WHEN $2 = 0 THEN clock_timestamp() END
		WHERE id = $1 AND state IN ('queued', 'dispatching')
		RETURNING state::text`, groupID, running).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) { // the group settled while we waited for its jobs' locks
		if state, err = groupState(ctx, tx, groupID); err != nil || state == GroupCanceled {
			return state, err
		}
		return state, fmt.Errorf("cancel group %d: it became %s meanwhile: %w", groupID, state, problem.ErrConflict)
	}
	if err != nil {
		return "", fmt.Errorf("cancel group %d: %w", groupID, err)
	}
	return state, nil
}

// RetryTx re-runs the failed, dependency-failed and cancelled jobs of a finished group; complete
// jobs are kept. Each re-run job's counter is recomputed from its dependency array (the readiness query),
// and those with nothing left to wait for are dispatched.
//
// The job rows are reset before the group row is touched, in the lock order of the package
// documentation; a group that turns out not to be finished rolls the reset back with the error.
func (g *Graph) RetryTx(ctx context.Context, tx pgx.Tx, groupID int64) (string, error) {
	tag, err := tx.Exec(ctx, `
		WITH finished AS MATERIALIZED (
			SELECT id FROM job_graph WHERE group_id = $1 AND state IN ('job_failed', 'dependency_failed', 'cancel_complete')
			ORDER BY id FOR UPDATE
		)
		UPDATE job_graph j SET state = 'waiting_on_dependency', attempt = 0, error = NULL, exit_code = NULL,
			as_built = NULL, worker_id = NULL, log_incomplete = false, started_at = NULL, finished_at = NULL,
			updated_at = clock_timestamp()
		FROM finished f WHERE j.id = f.id AND j.state IN ('job_failed', 'dependency_failed', 'cancel_complete')`, groupID)
	if err != nil {
		return "", fmt.Errorf("reset jobs of group %d: %w", groupID, err)
	}
	var state string
	err = tx.QueryRow(ctx, `
		UPDATE groups SET state = 'dispatching', cancel_requested = false, failed = 0, finished_at = NULL,
			remaining = $2, updated_at = clock_timestamp(), watch_changed_at = clock_timestamp()
		WHERE id = $1 AND state IN ('failed', 'canceled') RETURNING state::text`, groupID, tag.RowsAffected()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		if state, err = groupState(ctx, tx, groupID); err != nil {
			return "", err
		}
		return state, fmt.Errorf("retry group %d: it is %s; only failed or canceled groups can be retried: %w", groupID, state, problem.ErrConflict)
	}
	if err != nil {
		return "", fmt.Errorf("retry group %d: %w", groupID, err)
	}
	if _, err := g.recountGroup(ctx, tx, groupID); err != nil {
		return "", err
	}
	return state, nil
}

// groupState returns the state of a group, or ErrNotFound.
func groupState(ctx context.Context, db pgx.Tx, groupID int64) (string, error) {
	var state string
	err := db.QueryRow(ctx, `SELECT state::text FROM groups WHERE id = $1`, groupID).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("group %d: %w", groupID, problem.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("get group %d: %w", groupID, err)
	}
	return state, nil
}
