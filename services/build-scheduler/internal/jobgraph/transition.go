package jobgraph

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
)

// Result says what a transition did. Applied is false when the guard matched nothing: the
// message was a repeat, came from a dead attempt, or arrived after the job was settled.
type Result struct {
	Applied    bool
	GroupID    int64
	State      string // the job's new state
	GroupState string // the group's state after the transition
}

// ReportTx applies a worker's report on tx. It is guarded by the job being running (or
// cancel_pending) under the reported attempt and lease token.
func (g *Graph) ReportTx(ctx context.Context, tx pgx.Tx, r queue.BuildReportArgs) (Result, error) {
	var res Result
	var target string
	err := tx.QueryRow(ctx, `
		UPDATE job_graph SET
			state = CASE
				WHEN $4 = 'succeeded' THEN 'complete'
				WHEN state = 'cancel_pending' OR $4 = 'cancelled' THEN 'cancel_complete'
				ELSE 'job_failed' END::job_state,
			as_built = nullif($5, ''), exit_code = $6, error = nullif($7, ''), log_incomplete = $8,
			lease_token = NULL, lease_expires_at = NULL,
			finished_at = clock_timestamp(), updated_at = clock_timestamp()
		WHERE id = $1 AND attempt = $2 AND lease_token = $3 AND state IN ('running', 'cancel_pending')
		RETURNING group_id, target, state::text`,
		r.JobID, r.Attempt, r.LeaseToken, r.Outcome, r.AsBuilt, r.ExitCode, r.Error, r.LogIncomplete,
	).Scan(&res.GroupID, &target, &res.State)
	if err == pgx.ErrNoRows {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("report job %d attempt %d: %w", r.JobID, r.Attempt, err)
	}
	res.Applied = true
	if res.State == JobFailed {
		msg := fmt.Sprintf("job %d failed on attempt %d (exit %d): %s", r.JobID, r.Attempt, r.ExitCode, r.Error)
		if err := addEvent(ctx, tx, &res.GroupID, &r.JobID, EventJobFailed, "%s", msg); err != nil {
			return res, err
		}
	}
	res.GroupState, err = g.consequences(ctx, tx, r.JobID, res.GroupID, target, res.State)
	return res, err
}

// consequences applies what follows from job jobID entering state: dependents released or
// failed, tokens dispatched, and the group's counters and state updated. It returns the group
// state.
func (g *Graph) consequences(ctx context.Context, tx pgx.Tx, jobID, groupID int64, target, state string) (string, error) {
	var finished, failed int
	switch state {
	case Complete:
		finished = 1
		if err := g.releaseDependents(ctx, tx, jobID, groupID); err != nil {
			return "", err
		}
	case JobFailed:
		n, err := failDependents(ctx, tx, jobID, groupID)
		if err != nil {
			return "", err
		}
		finished, failed = 1+n, 1+n
	case CancelComplete:
		finished = 1
	case Ready:
		return "", g.dispatch(ctx, tx, []readyJob{{id: jobID, groupID: groupID, target: target}})
	}
	return settleGroup(ctx, tx, groupID, finished, failed)
}

// releaseDependents decrements the counters of the waiting jobs of the same group that depend on
// jobID and dispatches those that reach zero. Row locks serialise two dependencies completing
// at once: the second UPDATE re-reads the row the first committed, so exactly one of them sees
// the counter reach zero.
func (g *Graph) releaseDependents(ctx context.Context, tx pgx.Tx, jobID, groupID int64) error {
	rows, err := tx.Query(ctx, `
		UPDATE job_graph SET
			waiting_on_count = waiting_on_count - 1,
			state = CASE WHEN waiting_on_count = 1 THEN 'ready' ELSE state END::job_state,
			updated_at = clock_timestamp()
		WHERE group_id = $1 AND dependencies @> ARRAY[$2::bigint] AND state = 'waiting_on_dependency'
		RETURNING id, target, state = 'ready'`, groupID, jobID)
	if err != nil {
		return fmt.Errorf("release dependents of job %d: %w", jobID, err)
	}
	ready, err := collectReady(rows, groupID)
	if err != nil {
		return fmt.Errorf("release dependents of job %d: %w", jobID, err)
	}
	return g.dispatch(ctx, tx, ready)
}

// failDependents marks every transitive dependent of jobID that has not run yet
// dependency_failed and returns how many it marked.
func failDependents(ctx context.Context, tx pgx.Tx, jobID, groupID int64) (int, error) {
	tag, err := tx.Exec(ctx, `
		WITH RECURSIVE down(id) AS (
			SELECT j.id FROM job_graph j WHERE j.group_id = $1 AND j.dependencies @> ARRAY[$2::bigint]
			UNION
			SELECT j.id FROM down d JOIN job_graph j ON j.group_id = $1 AND j.dependencies @> ARRAY[d.id]
		)
		UPDATE job_graph j SET state = 'dependency_failed', error = 'dependency ' || $2 || ' failed',
			finished_at = clock_timestamp(), updated_at = clock_timestamp()
		FROM down WHERE j.id = down.id AND j.state IN ('pending', 'waiting_on_dependency', 'ready')`,
		groupID, jobID)
	if err != nil {
		return 0, fmt.Errorf("fail dependents of job %d: %w", jobID, err)
	}
	return int(tag.RowsAffected()), nil
}

// settleGroup counts finished jobs off the group's remaining counter; the transition that takes
// it to zero decides the group's final state in its own transaction. The group row is updated
// last, so its lock is held only until commit.
func settleGroup(ctx context.Context, tx pgx.Tx, groupID int64, finished, failed int) (string, error) {
	var state string
	err := tx.QueryRow(ctx, `
		UPDATE groups SET
			remaining = remaining - $2, failed = failed + $3, updated_at = clock_timestamp(),
			state = CASE
				WHEN remaining - $2 > 0 THEN state
				WHEN cancel_requested THEN 'canceled'
				WHEN failed + $3 > 0 THEN 'failed'
				ELSE 'complete' END::group_state,
			finished_at = CASE WHEN remaining - $2 > 0 THEN NULL ELSE clock_timestamp() END
		WHERE id = $1
		RETURNING state::text`, groupID, finished, failed).Scan(&state)
	if err != nil {
		return "", fmt.Errorf("settle group %d: %w", groupID, err)
	}
	return state, nil
}
