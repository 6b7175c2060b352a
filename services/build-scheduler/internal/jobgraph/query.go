package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// groupSelect reads a group with its counts by state in one query (Habitat Builder's job server
// ran nine COUNT(*) queries).
const groupSelect = `
	SELECT g.id, g.name, g.state::text, g.cancel_requested, g.created_at, g.updated_at, g.finished_at,
		coalesce((SELECT jsonb_object_agg(state, n) FROM (
			SELECT state::text, count(*) AS n FROM job_graph WHERE group_id = g.id GROUP BY state) c), '{}')
	FROM groups g`

func scanGroup(row pgx.Row) (Group, error) {
	var g Group
	err := row.Scan(&g.ID, &g.Name, &g.State, &g.CancelRequested, &g.CreatedAt, &g.UpdatedAt, &g.FinishedAt, &g.Counts)
	for _, n := range g.Counts {
		g.Total += n
	}
	return g, err
}

// GetGroup returns a group with its job counts by state.
func GetGroup(ctx context.Context, db postgres.DBTX, id int64) (Group, error) {
	g, err := scanGroup(db.QueryRow(ctx, groupSelect+` WHERE g.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return g, fmt.Errorf("group %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return g, fmt.Errorf("get group %d: %w", id, err)
	}
	return g, nil
}

// ListGroups returns up to limit groups, newest first, older than the cursor id (0: from the
// newest), optionally only those in state.
func ListGroups(ctx context.Context, db postgres.DBTX, state string, before int64, limit int) ([]Group, error) {
	rows, err := db.Query(ctx, groupSelect+`
		WHERE ($1 = '' OR g.state::text = $1) AND ($2 = 0 OR g.id < $2) ORDER BY g.id DESC LIMIT $3`,
		state, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Group, error) { return scanGroup(r) })
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return out, nil
}

const jobSelect = `
	SELECT id, group_id, name, target, state::text, priority, command, env, timeout_ms / 1000.0, dependencies,
		waiting_on_count, attempt, max_attempts, worker_id, as_built, exit_code, error, log_incomplete,
		created_at, started_at, finished_at
	FROM job_graph`

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	err := row.Scan(&j.ID, &j.GroupID, &j.Name, &j.Target, &j.State, &j.Priority, &j.Command, &j.Env,
		&j.TimeoutSeconds, &j.Dependencies, &j.WaitingOn, &j.Attempt, &j.MaxAttempts, &j.WorkerID, &j.AsBuilt,
		&j.ExitCode, &j.Error, &j.LogIncomplete, &j.CreatedAt, &j.StartedAt, &j.FinishedAt)
	return j, err
}

// GetJob returns one job.
func GetJob(ctx context.Context, db postgres.DBTX, id int64) (Job, error) {
	j, err := scanJob(db.QueryRow(ctx, jobSelect+` WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("get job %d: %w", id, err)
	}
	return j, nil
}

// ListJobs returns up to limit jobs of a group in id order after the cursor id, optionally only
// those in state.
func ListJobs(ctx context.Context, db postgres.DBTX, groupID int64, state string, after int64, limit int) ([]Job, error) {
	rows, err := db.Query(ctx, jobSelect+`
		WHERE group_id = $1 AND ($2 = '' OR state::text = $2) AND id > $3 ORDER BY id LIMIT $4`,
		groupID, state, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs of group %d: %w", groupID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) { return scanJob(r) })
	if err != nil {
		return nil, fmt.Errorf("list jobs of group %d: %w", groupID, err)
	}
	return out, nil
}
