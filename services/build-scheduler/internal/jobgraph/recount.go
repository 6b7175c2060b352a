package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
)

// Recount is what a recount found wrong and fixed.
type Recount struct {
	CountersFixed    []int64 `json:"counters_fixed"`
	MadeReady        []int64 `json:"made_ready"`
	DependencyFailed []int64 `json:"dependency_failed"`
	GroupsSettled    []int64 `json:"groups_settled"`
}

// unfinishedDeps is the readiness query: how many of a job's dependencies are not complete,
// computed from the immutable array alone.
const unfinishedDeps = `(SELECT count(*) FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state <> 'complete')`

// RecountTx recomputes every active group's counters and states from the dependency arrays and
// reports what it changed: the recovery path for counter drift.
func (g *Graph) RecountTx(ctx context.Context, tx pgx.Tx) (Recount, error) {
	var out Recount
	rows, err := tx.Query(ctx, `SELECT id FROM groups WHERE state IN ('queued', 'dispatching') ORDER BY id`)
	if err != nil {
		return out, fmt.Errorf("list active groups: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return out, fmt.Errorf("list active groups: %w", err)
	}
	for _, id := range ids {
		r, err := g.recountGroup(ctx, tx, id)
		if err != nil {
			return out, err
		}
		out.CountersFixed = append(out.CountersFixed, r.CountersFixed...)
		out.MadeReady = append(out.MadeReady, r.MadeReady...)
		out.DependencyFailed = append(out.DependencyFailed, r.DependencyFailed...)
		out.GroupsSettled = append(out.GroupsSettled, r.GroupsSettled...)
	}
	return out, nil
}

// recountGroup recomputes one group from its dependency arrays: waiting jobs with a failed
// dependency become dependency_failed, counters are set to the number of unfinished
// dependencies, jobs at zero become ready and are dispatched, and the group's own counters are
// recomputed and settled.
func (g *Graph) recountGroup(ctx context.Context, tx pgx.Tx, groupID int64) (Recount, error) {
	var out Recount
	// The group's unfinished jobs are locked first, in id order (the package's lock order), so
	// no transition moves them while they are recounted.
	_, err := tx.Exec(ctx, `SELECT FROM job_graph WHERE group_id = $1 AND state NOT IN `+finalStates+`
		ORDER BY id FOR UPDATE`, groupID)
	if err != nil {
		return out, fmt.Errorf("lock jobs of group %d: %w", groupID, err)
	}
	out.DependencyFailed, err = ids(ctx, tx, `
		UPDATE job_graph j SET state = 'dependency_failed', finished_at = clock_timestamp(), updated_at = clock_timestamp(),
			error = 'a dependency failed (found by recount)'
		WHERE j.group_id = $1 AND j.state IN ('pending', 'waiting_on_dependency', 'ready')
			AND EXISTS (SELECT FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state IN ('job_failed', 'dependency_failed'))
		RETURNING j.id`, groupID)
	if err != nil {
		return out, fmt.Errorf("fail dependents in group %d: %w", groupID, err)
	}
	out.CountersFixed, err = ids(ctx, tx, `
		UPDATE job_graph j SET waiting_on_count = `+unfinishedDeps+`, updated_at = clock_timestamp()
		WHERE j.group_id = $1 AND j.state IN ('pending', 'waiting_on_dependency') AND j.waiting_on_count <> `+unfinishedDeps+`
		RETURNING j.id`, groupID)
	if err != nil {
		return out, fmt.Errorf("recount group %d: %w", groupID, err)
	}
	rows, err := tx.Query(ctx, `
		UPDATE job_graph SET state = 'ready', updated_at = clock_timestamp()
		WHERE group_id = $1 AND state IN ('pending', 'waiting_on_dependency') AND waiting_on_count = 0
		RETURNING id, target, true`, groupID)
	if err != nil {
		return out, fmt.Errorf("ready jobs of group %d: %w", groupID, err)
	}
	ready, err := collectReady(rows, groupID)
	if err != nil {
		return out, fmt.Errorf("ready jobs of group %d: %w", groupID, err)
	}
	for _, r := range ready {
		out.MadeReady = append(out.MadeReady, r.id)
	}
	if err := g.dispatch(ctx, tx, ready); err != nil {
		return out, err
	}
	settled, err := resettleGroup(ctx, tx, groupID)
	if settled {
		out.GroupsSettled = append(out.GroupsSettled, groupID)
	}
	return out, err
}

// resettleGroup recomputes a group's shard counters, remaining and failed from its jobs' states
// and settles it when nothing is left. It reports whether it settled the group.
func resettleGroup(ctx context.Context, tx pgx.Tx, groupID int64) (bool, error) {
	if err := recountShards(ctx, tx, groupID); err != nil {
		return false, err
	}
	var state string
	err := tx.QueryRow(ctx, `
		WITH c AS (
			SELECT count(*) FILTER (WHERE state NOT IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete')) AS remaining,
				count(*) FILTER (WHERE state IN ('job_failed', 'dependency_failed')) AS failed
			FROM job_graph WHERE group_id = $1
		)
		UPDATE groups g SET remaining = c.remaining, failed = c.failed, updated_at = clock_timestamp(),
			state = CASE WHEN c.remaining > 0 THEN g.state
				WHEN g.cancel_requested THEN 'canceled' WHEN c.failed > 0 THEN 'failed' ELSE 'complete' END::group_state,
			finished_at = CASE WHEN c.remaining > 0 THEN NULL ELSE clock_timestamp() END
		FROM c WHERE g.id = $1 AND g.state IN ('queued', 'dispatching')
		RETURNING g.state::text`, groupID).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resettle group %d: %w", groupID, err)
	}
	return state != GroupQueued && state != GroupDispatching, nil
}

// Drift lists the waiting jobs of active groups whose counter disagrees with the readiness query, as
// "job id: counter n, unfinished dependencies m", without changing anything.
func Drift(ctx context.Context, db postgres.DBTX) (map[int64][]string, error) {
	rows, err := db.Query(ctx, `
		SELECT j.group_id, format('job %s: counter %s, unfinished dependencies %s', j.id, j.waiting_on_count, `+unfinishedDeps+`)
		FROM job_graph j JOIN groups g ON g.id = j.group_id
		WHERE g.state IN ('queued', 'dispatching') AND j.state = 'waiting_on_dependency'
			AND j.waiting_on_count <> `+unfinishedDeps+`
		ORDER BY j.id LIMIT 1000`)
	if err != nil {
		return nil, fmt.Errorf("compare counters with dependencies: %w", err)
	}
	out := map[int64][]string{}
	for rows.Next() {
		var (
			group int64
			msg   string
		)
		if err := rows.Scan(&group, &msg); err != nil {
			return nil, fmt.Errorf("scan drift: %w", err)
		}
		out[group] = append(out[group], msg)
	}
	return out, rows.Err()
}

func ids(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]int64, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
