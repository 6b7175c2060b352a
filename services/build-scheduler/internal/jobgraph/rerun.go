package jobgraph

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// Claim is the best ready job of the target, claimed for the caller on the transaction: the
	// job itself, unless an older group's ready job of the target comes first.
	Claim   Claim
	Claimed bool
}

// RerunTx runs a failed or cancelled job again, on tx, for River UI's Retry of the dispatch token
// that ran it: what POST /v1/groups/{id}/retry does for a whole group, for this job alone. The
// job and its dependents that failed or were cancelled (with it, or with the group) wait again,
// its group reopens if it had settled, and jobs left with nothing to wait for become ready and
// get dispatch tokens, except the job itself: its token is the caller's, which claims the best
// ready job of the target for workerID under lease, on tx, so that the Retry is itself a build.
// The event records why (reason) and what changed.
//
// A job that is neither failed nor cancelled any more (the group was retried through the API
// since, or it succeeded) is left as it is: the error wraps problem.ErrConflict, and Rerun says
// its group, name and state.
func (g *Graph) RerunTx(ctx context.Context, tx pgx.Tx, jobID int64, reason, workerID string, lease time.Duration) (Rerun, error) {
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
	err = addEvent(ctx, tx, &r.GroupID, &jobID, EventRiverUIAction, "%s: job %d (%s) runs again with %d dependents that had failed or been cancelled%s",
		reason, jobID, r.Name, len(r.Reset)-1, reopened)
	if err != nil {
		return r, err
	}
	r.Claim, r.Claimed, err = ClaimNext(ctx, tx, r.Target, workerID, lease)
	if err != nil {
		return r, err
	}
	if !r.Claimed { // the job is not ready after all: it gets a token of its own
		if err := g.dispatch(ctx, tx, []readyJob{{id: jobID, groupID: r.GroupID, name: r.Name, target: r.Target}}); err != nil {
			return r, err
		}
	}
	// The claim set this transaction's commit asynchronous; the rerun's must be durable.
	if err := queries.TransactionDurable(ctx, tx); err != nil {
		return r, fmt.Errorf("rerun job %d: %w", jobID, err)
	}
	return r, nil
}

// reopen recounts r's group after its jobs were reset, in the package's lock order (jobs, then
// stripes, then the group row), holding back the dispatch token of r's job, and reopens the
// group if it had settled.
func (g *Graph) reopen(ctx context.Context, tx pgx.Tx, r *Rerun) error {
	if _, err := g.recountJobs(ctx, tx, r.GroupID, r.JobID); err != nil {
		return err
	}
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
