package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/problem"
)

// CancelTx cancels a group: jobs that have not started are cancelled at once (cancel_complete),
// running ones become cancel_pending, and the River jobs of its builds are cancelled with River's
// JobCancelTx: a waiting one at once, a running one by River telling its worker, which kills the
// build's process group and reports it cancelled. The group is canceled when nothing runs any
// more. Cancelling a canceled group again is
// a no-op; a group that completed or failed cannot be cancelled (ErrConflict).
func (g *Graph) CancelTx(ctx context.Context, tx pgx.Tx, groupID int64, reason string) (GroupState, error) {
	state, err := groupState(ctx, tx, groupID)
	if err != nil || state == GroupCanceled {
		return state, err
	}
	if state == GroupComplete || state == GroupFailed {
		return state, fmt.Errorf("cancel group %d: it is already %s: %w", groupID, state, problem.ErrConflict)
	}
	cancelled, err := queries.JobCancelByGroup(ctx, tx, groupID)
	if err != nil {
		return "", fmt.Errorf("cancel jobs of group %d: %w", groupID, err)
	}
	if err := recountStripes(ctx, tx, groupID); err != nil {
		return "", err
	}
	running, err := queries.JobCountCancelPending(ctx, tx, groupID)
	if err != nil {
		return "", fmt.Errorf("count cancelling jobs of group %d: %w", groupID, err)
	}
	if err := addEvent(ctx, tx, &groupID, nil, EventCanceled, "%s; %d jobs cancelled, %d running jobs told to stop",
		reason, cancelled-running, running); err != nil {
		return "", err
	}
	canceled, err := queries.GroupCancel(ctx, tx, dbsqlc.GroupCancelParams{ID: groupID, Running: int32(running)})
	if errors.Is(err, pgx.ErrNoRows) { // the group settled while we waited for its jobs' locks
		if state, err = groupState(ctx, tx, groupID); err != nil || state == GroupCanceled {
			return state, err
		}
		return state, fmt.Errorf("cancel group %d: it became %s meanwhile: %w", groupID, state, problem.ErrConflict)
	}
	if err != nil {
		return "", fmt.Errorf("cancel group %d: %w", groupID, err)
	}
	if err := g.cancelBuilds(ctx, tx, groupID); err != nil {
		return "", err
	}
	return GroupState(canceled), nil
}

// cancelBuilds cancels, through River's JobCancelTx, the River jobs of groupID's builds that may
// still run. They are locked last, after every row of the job graph the cancel writes.
func (g *Graph) cancelBuilds(ctx context.Context, tx pgx.Tx, groupID int64) error {
	ids, err := queries.BuildRunLive(ctx, tx, groupID)
	if err != nil {
		return fmt.Errorf("list the River jobs of group %d: %w", groupID, err)
	}
	for _, id := range ids {
		if _, err := g.Builds.JobCancelTx(ctx, tx, id); err != nil && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("cancel River job %d of group %d: %w", id, groupID, err)
		}
	}
	return nil
}

// RetryTx re-runs the failed, dependency-failed and cancelled jobs of a finished group; complete
// jobs are kept. Each re-run job's counter is recomputed from its dependency array (the readiness query),
// and those with nothing left to wait for are dispatched.
//
// The job rows are reset before the group row is touched, in the lock order of the package
// documentation; a group that turns out not to be finished rolls the reset back with the error.
func (g *Graph) RetryTx(ctx context.Context, tx pgx.Tx, groupID int64) (GroupState, error) {
	reset, err := queries.JobResetForRetry(ctx, tx, groupID)
	if err != nil {
		return "", fmt.Errorf("reset jobs of group %d: %w", groupID, err)
	}
	retried, err := queries.GroupRetry(ctx, tx, dbsqlc.GroupRetryParams{ID: groupID, Remaining: int32(reset)})
	if errors.Is(err, pgx.ErrNoRows) {
		state, err := groupState(ctx, tx, groupID)
		if err != nil {
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
	return GroupState(retried), nil
}

// groupState returns the state of a group, or ErrNotFound.
func groupState(ctx context.Context, db pgx.Tx, groupID int64) (GroupState, error) {
	state, err := queries.GroupGetState(ctx, db, groupID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("group %d: %w", groupID, problem.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("get group %d: %w", groupID, err)
	}
	return GroupState(state), nil
}
