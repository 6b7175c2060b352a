package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/problem"
)

// Rerun is what RerunTx did.
type Rerun struct {
	JobID, GroupID int64
	Name, Target   string
	// State is the job's state when RerunTx found it.
	State JobState
	// Reset are the jobs waiting again: the job and its dependents that had failed or been
	// cancelled.
	Reset []int64
	// Reopened says the group had settled and is dispatching again.
	Reopened bool
	// Attempt is the job's new attempt, and RiverJobID the River job that runs it.
	Attempt    int
	RiverJobID int64
	// Targets are the targets whose queues got River jobs, to announce after the commit.
	Targets []string
}

// RerunTx runs a failed or cancelled job again, on tx, for River UI's Retry of the River job of
// one of its attempts: what POST /v1/groups/{id}/retry does for a whole group, for this job
// alone. The job and its dependents that failed or were cancelled (with it, or with the group)
// wait again, its group reopens if it had settled, and the jobs left with nothing to wait for
// become ready with their River jobs, the job itself first among them as its next attempt
// (Rerun.Attempt, Rerun.RiverJobID). The event records why (reason) and what changed.
//
// A job that is neither failed nor cancelled any more (the group was retried through the API
// since, or it succeeded) is left as it is: the error wraps problem.ErrConflict, and Rerun says
// its group, name and state.
func (g *Graph) RerunTx(ctx context.Context, tx pgx.Tx, jobID int64, reason string) (Rerun, error) {
	r := Rerun{JobID: jobID}
	row, err := queries.JobGetForRerun(ctx, tx, jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("rerun job %d: %w", jobID, problem.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("rerun job %d: %w", jobID, err)
	}
	r.GroupID, r.Name, r.Target, r.State = row.GroupID, row.Name, row.Target, JobState(row.State)
	if r.State != JobFailed && r.State != CancelComplete {
		return r, fmt.Errorf("rerun job %d: it is %s; only a failed or cancelled job runs again: %w", jobID, r.State, problem.ErrConflict)
	}
	r.Reset, err = queries.JobResetForRerun(ctx, tx, dbsqlc.JobResetForRerunParams{JobID: jobID, GroupID: r.GroupID})
	if err != nil {
		return r, fmt.Errorf("reset job %d for a rerun: %w", jobID, err)
	}
	if err := g.reopen(ctx, tx, &r); err != nil {
		return r, err
	}
	reopened := ""
	if r.Reopened {
		reopened = "; the group is open again"
	}
	err = addEvent(ctx, tx, &r.GroupID, &jobID, EventRiverUIAction, "%s: job %d (%s) runs again as attempt %d (River job %d) with %d dependents that had failed or been cancelled%s",
		reason, jobID, r.Name, r.Attempt, r.RiverJobID, len(r.Reset)-1, reopened)
	if err != nil {
		return r, err
	}
	if err := queries.TransactionDurable(ctx, tx); err != nil {
		return r, fmt.Errorf("rerun job %d: %w", jobID, err)
	}
	return r, nil
}

// reopen recounts r's group after its jobs were reset, in the package's lock order (jobs, then
// stripes, then the group row), which makes r's job ready under its next attempt with its River
// job, and reopens the group if it had settled.
func (g *Graph) reopen(ctx context.Context, tx pgx.Tx, r *Rerun) error {
	rc, err := g.recountJobs(ctx, tx, r.GroupID)
	if err != nil {
		return err
	}
	r.RiverJobID, r.Targets = rc.riverJobs[r.JobID], rc.targets
	job, err := queries.JobGet(ctx, tx, r.JobID)
	if err != nil {
		return fmt.Errorf("read job %d after its rerun: %w", r.JobID, err)
	}
	r.Attempt = int(job.Attempt)
	if err := recountStripes(ctx, tx, r.GroupID); err != nil {
		return err
	}
	n, err := queries.GroupReopen(ctx, tx, r.GroupID)
	if err != nil {
		return fmt.Errorf("reopen group %d: %w", r.GroupID, err)
	}
	r.Reopened = n > 0
	if _, err := queries.GroupResettle(ctx, tx, r.GroupID); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("resettle group %d: %w", r.GroupID, err)
	}
	return nil
}
