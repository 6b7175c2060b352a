package jobgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/dag"
)

// SubmitTx writes a validated plan as a new group on tx and dispatches its jobs that have no
// dependencies. maxAttempts bounds how often a job is handed out after losing its worker.
func (g *Graph) SubmitTx(ctx context.Context, tx pgx.Tx, plan dag.Plan, maxAttempts int) (int64, error) {
	var groupID int64
	err := tx.QueryRow(ctx, `INSERT INTO groups (name, remaining) VALUES ($1, $2) RETURNING id`,
		plan.Name, len(plan.Jobs)).Scan(&groupID)
	if err != nil {
		return 0, fmt.Errorf("insert group %q: %w", plan.Name, err)
	}
	ids, err := allocateIDs(ctx, tx, len(plan.Jobs))
	if err != nil {
		return 0, err
	}
	ids = topologicalIDs(plan, ids)
	if err := insertShards(ctx, tx, groupID, ids); err != nil {
		return 0, err
	}
	cols, err := jobColumns(plan, ids)
	if err != nil {
		return 0, err
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO job_graph (id, group_id, name, target, priority, command, payload, env, timeout_ms,
			dependencies, dependents, waiting_on_count, state, max_attempts)
		SELECT id, $1, name, target, priority,
			ARRAY(SELECT jsonb_array_elements_text(command::jsonb)), payload::jsonb, env::jsonb, timeout_ms,
			ARRAY(SELECT jsonb_array_elements_text(deps::jsonb)::bigint),
			ARRAY(SELECT jsonb_array_elements_text(dependents::jsonb)::bigint), jsonb_array_length(deps::jsonb),
			CASE WHEN jsonb_array_length(deps::jsonb) = 0 THEN 'ready' ELSE 'waiting_on_dependency' END::job_state,
			$11
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[],
			$9::bigint[], $10::text[], $12::text[]) AS u(id, name, target, priority, command, payload, env, timeout_ms, deps, dependents)
		RETURNING id, target, state = 'ready'`,
		groupID, cols.ids, cols.names, cols.targets, cols.priorities, cols.commands, cols.payloads,
		cols.envs, cols.timeouts, cols.deps, maxAttempts, cols.dependents)
	if err != nil {
		return 0, fmt.Errorf("insert jobs of group %d: %w", groupID, err)
	}
	ready, err := collectReady(rows, groupID)
	if err != nil {
		return 0, fmt.Errorf("insert jobs of group %d: %w", groupID, err)
	}
	return groupID, g.dispatch(ctx, tx, ready)
}

// allocateIDs reserves n job ids up front, so that dependencies can be written as ids in the
// same statement that inserts the jobs.
func allocateIDs(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT nextval(pg_get_serial_sequence('job_graph', 'id')) FROM generate_series(1, $1)`, n)
	if err != nil {
		return nil, fmt.Errorf("allocate %d job ids: %w", n, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("allocate %d job ids: %w", n, err)
	}
	return ids, nil
}

// topologicalIDs hands the ascending ids out in the plan's topological order and returns them
// by job index, so that every job's id is above its dependencies'. Transitions lock job rows
// from a job to its dependents, so ids in that order make every transaction lock job rows in
// ascending id order, and two of them can never wait on each other's rows (see the package documentation).
func topologicalIDs(plan dag.Plan, ascending []int64) []int64 {
	slices.Sort(ascending)
	byJob := make([]int64, len(plan.Jobs))
	for k, i := range plan.Order {
		byJob[i] = ascending[k]
	}
	return byJob
}

type columns struct {
	ids, timeouts                        []int64
	priorities                           []int32
	names, targets, commands, envs, deps []string
	dependents                           []string
	payloads                             []*string
}

// jobColumns turns the plan into the column arrays of one unnest insert. Each job's dependents
// (the reverse of the dependency arrays, in id order) are written with it.
func jobColumns(plan dag.Plan, ids []int64) (columns, error) {
	var c columns
	dependents := make([][]int64, len(plan.Jobs))
	for i, j := range plan.Jobs {
		for _, d := range j.Deps {
			dependents[d] = append(dependents[d], ids[i])
		}
	}
	for i, j := range plan.Jobs {
		deps := make([]int64, len(j.Deps))
		for k, d := range j.Deps {
			deps[k] = ids[d]
		}
		rev, err := json.Marshal(orEmptyIDs(dependents[i]))
		if err != nil {
			return c, fmt.Errorf("encode job %q: %w", j.Name, err)
		}
		c.dependents = append(c.dependents, string(rev))
		cmd, err1 := json.Marshal(j.Command)
		env, err2 := json.Marshal(orEmpty(j.Env))
		dj, err3 := json.Marshal(deps)
		if err := errors.Join(err1, err2, err3); err != nil {
			return c, fmt.Errorf("encode job %q: %w", j.Name, err)
		}
		var payload *string
		if len(j.Payload) > 0 {
			payload = new(string(j.Payload))
		}
		c.ids = append(c.ids, ids[i])
		c.names, c.targets = append(c.names, j.Name), append(c.targets, j.Target)
		c.priorities = append(c.priorities, int32(j.Priority))
		c.commands, c.envs, c.deps = append(c.commands, string(cmd)), append(c.envs, string(env)), append(c.deps, string(dj))
		c.payloads = append(c.payloads, payload)
		c.timeouts = append(c.timeouts, j.Timeout.Milliseconds())
	}
	return c, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func orEmptyIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
