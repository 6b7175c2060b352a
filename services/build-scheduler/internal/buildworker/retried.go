package buildworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/problem"
)

// retriedOutput is what a River job that River UI's Retry brought back records as its output:
// the build it ran, and the attempt that runs it again.
type retriedOutput struct {
	JobID      int64 `json:"job_id"`
	Attempt    int   `json:"attempt"`
	RiverJobID int64 `json:"river_job_id"`
}

// retried acts on River UI's Retry of a build's River job. A failed or cancelled build runs again
// as a new attempt: the job and its dependents that failed or were cancelled wait again, its group
// reopens, and the new attempt gets a River job of its own in the scheduler's order (every River
// job runs the attempt its args name), while this one completes naming it. A build that succeeded
// is not rebuilt, nor one that is waiting or running as another attempt: this River job then
// ends cancelled, saying why and what to do instead. Either way the press is recorded in the
// group's events, in the same transaction.
func (w *Worker) retried(ctx context.Context, job *river.Job[queue.BuildRunArgs]) error {
	a := job.Args
	reason := fmt.Sprintf("River UI retry of build_run %d, which ran attempt %d", job.ID, a.Attempt)
	var r jobgraph.Rerun
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) (err error) {
		if r, err = w.Graph.RerunTx(ctx, tx, a.JobID, reason); err != nil {
			return err
		}
		out := retriedOutput{JobID: a.JobID, Attempt: r.Attempt, RiverJobID: r.RiverJobID}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCompleted, Output: out})
	})
	var refused error
	switch {
	case errors.Is(err, problem.ErrConflict) && r.State == jobgraph.Complete:
		refused = fmt.Errorf("build %s (job %d, group %d) already succeeded: a River job does not rebuild a complete job; submit a new group with POST /v1/groups to build it again",
			a.JobName, a.JobID, a.GroupID)
	case errors.Is(err, problem.ErrConflict):
		refused = fmt.Errorf("build %s (job %d, group %d) is %s, neither failed nor cancelled: it runs (or waits) as an attempt of its own; follow it with GET /v1/groups/%d",
			a.JobName, a.JobID, a.GroupID, r.State, a.GroupID)
	case errors.Is(err, problem.ErrNotFound):
		refused = fmt.Errorf("build %s (job %d, group %d) no longer exists; submit it again with POST /v1/groups", a.JobName, a.JobID, a.GroupID)
	case err != nil:
		return fmt.Errorf("run build %s (job %d) again: %w", a.JobName, a.JobID, err)
	}
	if refused != nil {
		return w.refuse(ctx, job, refused)
	}
	w.announce(ctx, jobgraph.BuildOf(a), r.Targets)
	did := fmt.Sprintf("build %s (job %d) of group %d runs again as attempt %d, River job %d, with %d dependents that had failed or been cancelled",
		a.JobName, a.JobID, a.GroupID, r.Attempt, r.RiverJobID, len(r.Reset)-1)
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, did, "group_id", a.GroupID, "build_job_id", a.JobID)
	return nil
}

// refuse ends a River job that River UI's Retry brought back but that has nothing to run again,
// cancelled with why (and what to do instead), recording the press in the group's events in the
// same transaction.
func (w *Worker) refuse(ctx context.Context, job *river.Job[queue.BuildRunArgs], why error) error {
	a := job.Args
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if err := jobgraph.RecordAction(ctx, tx, &a.GroupID, &a.JobID, "River UI retry of build_run %d: %s", job.ID, why); err != nil {
			return err
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCancelled, Err: why})
	})
	if err != nil {
		return fmt.Errorf("refuse the retry of build_run %d: %w", job.ID, err)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, why.Error(), "group_id", a.GroupID, "build_job_id", a.JobID)
	return nil
}
