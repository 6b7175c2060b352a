package jobgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// GetGroup returns a group with its job counts by state, read in the same statement (Habitat
// Builder's job server ran nine COUNT(*) queries): a settled group's as they were recorded when
// it settled, an open group's counted now.
func GetGroup(ctx context.Context, db postgres.DBTX, id int64) (Group, error) {
	r, err := queries.GroupGet(ctx, db, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Group{}, fmt.Errorf("group %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return Group{}, fmt.Errorf("get group %d: %w", id, err)
	}
	g, err := toGroup(dbsqlc.GroupListRow(r))
	if err != nil {
		return g, fmt.Errorf("get group %d: %w", id, err)
	}
	return g, nil
}

// ListGroups returns up to limit groups, newest first, older than the cursor id (0: from the
// newest), optionally only those in state, with their job counts as GetGroup reads them: only the
// open groups of the page have their jobs counted, so a page costs about the same whatever the
// size of the table.
func ListGroups(ctx context.Context, db postgres.DBTX, state GroupState, before int64, limit int) ([]Group, error) {
	rows, err := queries.GroupList(ctx, db, dbsqlc.GroupListParams{State: string(state), Before: before, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := make([]Group, 0, len(rows))
	for _, r := range rows {
		g, err := toGroup(r)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		out = append(out, g)
	}
	return out, nil
}

func toGroup(r dbsqlc.GroupListRow) (Group, error) {
	g := Group{
		ID: r.ID, Name: r.Name, State: GroupState(r.State), CancelRequested: r.CancelRequested,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt,
	}
	if err := json.Unmarshal(r.Counts, &g.Counts); err != nil {
		return g, fmt.Errorf("decode counts of group %d: %w", r.ID, err)
	}
	for _, n := range g.Counts {
		g.Total += n
	}
	return g, nil
}

// GetJob returns one job.
func GetJob(ctx context.Context, db postgres.DBTX, id int64) (Job, error) {
	r, err := queries.JobGet(ctx, db, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, fmt.Errorf("job %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("get job %d: %w", id, err)
	}
	j, err := toJob(dbsqlc.JobListByGroupRow(r))
	if err != nil {
		return j, fmt.Errorf("get job %d: %w", id, err)
	}
	return j, nil
}

// ListJobs returns up to limit jobs of a group in id order after the cursor id, optionally only
// those in state.
func ListJobs(ctx context.Context, db postgres.DBTX, groupID int64, state JobState, after int64, limit int) ([]Job, error) {
	rows, err := queries.JobListByGroup(ctx, db, dbsqlc.JobListByGroupParams{GroupID: groupID, State: string(state), After: after, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list jobs of group %d: %w", groupID, err)
	}
	out := make([]Job, 0, len(rows))
	for _, r := range rows {
		j, err := toJob(r)
		if err != nil {
			return nil, fmt.Errorf("list jobs of group %d: %w", groupID, err)
		}
		out = append(out, j)
	}
	return out, nil
}

func toJob(r dbsqlc.JobListByGroupRow) (Job, error) {
	j := Job{
		ID: r.ID, GroupID: r.GroupID, Name: r.Name, Target: r.Target, State: JobState(r.State), Priority: int(r.Priority),
		Command: r.Command, TimeoutSeconds: float64(r.TimeoutMs) / 1000, Dependencies: r.Dependencies,
		WaitingOn: int(r.WaitingOnCount), Attempt: int(r.Attempt), MaxAttempts: int(r.MaxAttempts),
		WorkerID: r.WorkerID, AsBuilt: r.AsBuilt, Error: r.Error, LogIncomplete: r.LogIncomplete,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
	}
	if r.ExitCode != nil {
		code := int(*r.ExitCode)
		j.ExitCode = &code
	}
	if err := json.Unmarshal(r.Env, &j.Env); err != nil {
		return j, fmt.Errorf("decode env of job %d: %w", r.ID, err)
	}
	return j, nil
}

// GraphNode is a job as a picture of its group draws it.
type GraphNode struct {
	ID           int64
	Name         string
	Target       string
	State        JobState
	Dependencies []int64
}

// GraphPage returns up to limit jobs of a group in id order (topological: a job's dependencies
// come before it) after the cursor id, with what a picture of the group needs.
func GraphPage(ctx context.Context, db postgres.DBTX, groupID, after int64, limit int) ([]GraphNode, error) {
	rows, err := queries.JobGraphPage(ctx, db, dbsqlc.JobGraphPageParams{GroupID: groupID, After: after, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("graph of group %d: %w", groupID, err)
	}
	out := make([]GraphNode, len(rows))
	for i, r := range rows {
		out[i] = GraphNode{ID: r.ID, Name: r.Name, Target: r.Target, State: JobState(r.State), Dependencies: r.Dependencies}
	}
	return out, nil
}
