package jobgraph

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
)

// analyzeFrom is the size from which a submitted group refreshes job_graph's statistics.
const analyzeFrom = 1000

// SubmitTx writes a validated plan as a new group on tx and inserts the River jobs of its jobs
// that have no dependencies, as their first attempt. maxAttempts bounds how often a job is handed out after losing its worker.
func (g *Graph) SubmitTx(ctx context.Context, tx pgx.Tx, plan dag.Plan, maxAttempts int) (int64, error) {
	groupID, err := queries.GroupInsert(ctx, tx, dbsqlc.GroupInsertParams{Name: plan.Name, Remaining: int32(len(plan.Jobs))})
	if err != nil {
		return 0, fmt.Errorf("insert group %q: %w", plan.Name, err)
	}
	ids, err := allocateIDs(ctx, tx, len(plan.Jobs))
	if err != nil {
		return 0, err
	}
	ids = topologicalIDs(plan, ids)
	if err := insertStripes(ctx, tx, groupID, ids); err != nil {
		return 0, err
	}
	cols, err := jobColumns(plan, ids)
	if err != nil {
		return 0, err
	}
	cols.GroupID, cols.MaxAttempts = groupID, int32(maxAttempts)
	if err := queries.JobInsertMany(ctx, tx, cols); err != nil {
		return 0, fmt.Errorf("insert jobs of group %d: %w", groupID, err)
	}
	if len(plan.Jobs) >= analyzeFrom {
		if err := queries.JobGraphAnalyze(ctx, tx); err != nil {
			return 0, fmt.Errorf("analyze job_graph after group %d: %w", groupID, err)
		}
	}
	var ready []Build
	for i, j := range plan.Jobs {
		if len(j.Deps) == 0 {
			ready = append(ready, Build{
				JobID: ids[i], GroupID: groupID, Name: j.Name, Target: j.Target, Attempt: 1, rank: int(cols.Ranks[i]),
				Command: j.Command, Env: j.Env, Payload: j.Payload, Timeout: j.Timeout,
			})
		}
	}
	_, _, err = g.dispatch(ctx, tx, ready)
	return groupID, err
}

// allocateIDs reserves n job ids up front, so that dependencies can be written as ids in the
// same statement that inserts the jobs.
func allocateIDs(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	ids, err := queries.JobAllocateIDs(ctx, tx, int32(n))
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

// jobColumns turns the plan into the column arrays of one unnest insert. Each job's dependents
// (the reverse of the dependency arrays, in id order) are written with it. A job without a
// payload has an empty one, which the insert stores as NULL.
func jobColumns(plan dag.Plan, ids []int64) (dbsqlc.JobInsertManyParams, error) {
	var c dbsqlc.JobInsertManyParams
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
		c.Dependents = append(c.Dependents, string(rev))
		cmd, err1 := json.Marshal(j.Command)
		env, err2 := json.Marshal(orEmpty(j.Env))
		dj, err3 := json.Marshal(deps)
		if err := errors.Join(err1, err2, err3); err != nil {
			return c, fmt.Errorf("encode job %q: %w", j.Name, err)
		}
		c.Ids = append(c.Ids, ids[i])
		c.Names, c.Targets = append(c.Names, j.Name), append(c.Targets, j.Target)
		c.Priorities = append(c.Priorities, int32(j.Priority))
		c.Commands, c.Envs, c.Deps = append(c.Commands, string(cmd)), append(c.Envs, string(env)), append(c.Deps, string(dj))
		c.Payloads = append(c.Payloads, string(j.Payload))
		c.TimeoutsMs = append(c.TimeoutsMs, j.Timeout.Milliseconds())
	}
	c.Ranks = ranks(plan, ids)
	return c, nil
}

// ranks returns each job's place in its group's fetch order, by job index: highest priority
// first, then lowest id (queue.BuildOrder).
func ranks(plan dag.Plan, ids []int64) []int32 {
	order := make([]int, len(plan.Jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if pa, pb := plan.Jobs[a].Priority, plan.Jobs[b].Priority; pa != pb {
			return cmp.Compare(pb, pa)
		}
		return cmp.Compare(ids[a], ids[b])
	})
	out := make([]int32, len(order))
	for rank, i := range order {
		out[i] = int32(rank)
	}
	return out
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
