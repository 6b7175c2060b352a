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

	riverJobs map[int64]int64 // the River job of each job made ready, by job id
	targets   []string        // the targets whose queues got them
}

// RecountTx recomputes every active group's counters and states from the dependency arrays and
// reports what it changed: the recovery path for counter drift.
func (g *Graph) RecountTx(ctx context.Context, tx pgx.Tx) (Recount, error) {
	var out Recount
	ids, err := queries.GroupListActive(ctx, tx)
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
// dependency become dependency_failed, those with a cancelled one cancel_complete, counters are
// set to the number of unfinished dependencies, jobs at zero become ready and are dispatched, and
// the group's own counters are recomputed and settled.
func (g *Graph) recountGroup(ctx context.Context, tx pgx.Tx, groupID int64) (Recount, error) {
	out, err := g.recountJobs(ctx, tx, groupID)
	if err != nil {
		return out, err
	}
	settled, err := resettleGroup(ctx, tx, groupID)
	if settled {
		out.GroupsSettled = append(out.GroupsSettled, groupID)
	}
	return out, err
}

// recountJobs is recountGroup's work on the group's jobs, the group's own counters left to the
// caller. The jobs it makes ready get their River jobs, which it returns.
func (g *Graph) recountJobs(ctx context.Context, tx pgx.Tx, groupID int64) (Recount, error) {
	var out Recount
	// The group's unfinished jobs are locked first, in id order (the package's lock order), so
	// no transition moves them while they are recounted.
	err := queries.JobLockUnfinished(ctx, tx, groupID)
	if err != nil {
		return out, fmt.Errorf("lock jobs of group %d: %w", groupID, err)
	}
	out.DependencyFailed, err = queries.JobFailByRecount(ctx, tx, groupID)
	if err != nil {
		return out, fmt.Errorf("fail dependents in group %d: %w", groupID, err)
	}
	if _, err = queries.JobCancelByRecount(ctx, tx, groupID); err != nil {
		return out, fmt.Errorf("cancel dependents in group %d: %w", groupID, err)
	}
	out.CountersFixed, err = queries.JobRecountWaiting(ctx, tx, groupID)
	if err != nil {
		return out, fmt.Errorf("recount group %d: %w", groupID, err)
	}
	rows, err := queries.JobReadyUnblocked(ctx, tx, groupID)
	if err != nil {
		return out, fmt.Errorf("ready jobs of group %d: %w", groupID, err)
	}
	ready := make([]Build, len(rows))
	for i, r := range rows {
		out.MadeReady = append(out.MadeReady, r.ID)
		ready[i], err = readyRow{ID: r.ID, GroupID: groupID, Name: r.Name, Target: r.Target, Attempt: r.Attempt,
			Rank: r.FetchRank, Command: r.Command, Env: r.Env, Payload: r.Payload, TimeoutMs: r.TimeoutMs}.build()
		if err != nil {
			return out, err
		}
	}
	ids, targets, err := g.dispatch(ctx, tx, ready)
	if err != nil {
		return out, err
	}
	out.riverJobs, out.targets = map[int64]int64{}, targets
	for i, b := range ready {
		out.riverJobs[b.JobID] = ids[i]
	}
	return out, nil
}

// resettleGroup recomputes a group's stripe counters, remaining and failed from its jobs' states
// and settles it when nothing is left, recording its jobs' counts by state as closeGroup does. It
// reports whether it settled the group.
func resettleGroup(ctx context.Context, tx pgx.Tx, groupID int64) (bool, error) {
	if err := recountStripes(ctx, tx, groupID); err != nil {
		return false, err
	}
	state, err := queries.GroupResettle(ctx, tx, groupID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resettle group %d: %w", groupID, err)
	}
	return GroupState(state) != GroupQueued && GroupState(state) != GroupDispatching, nil
}

// Drift lists the waiting jobs of active groups whose counter disagrees with the readiness query,
// as "job id: counter n, unfinished dependencies m", without changing anything.
func Drift(ctx context.Context, db postgres.DBTX) (map[int64][]string, error) {
	rows, err := queries.JobListDrift(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("compare counters with dependencies: %w", err)
	}
	out := map[int64][]string{}
	for _, r := range rows {
		out[r.GroupID] = append(out[r.GroupID], r.Message)
	}
	return out, nil
}
