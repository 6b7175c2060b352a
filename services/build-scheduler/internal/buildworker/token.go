package buildworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/uiaction"
	"drover.dev/shared/problem"
)

// tokenOutput is what a token records as its output when it ends (River UI shows it): its target,
// and the build it carried, or none when it found nothing to build.
type tokenOutput struct {
	Target string       `json:"target"`
	Build  *builtOutput `json:"build"`
}

// builtOutput names the build a token carried and how it ended.
type builtOutput struct {
	JobID   int64              `json:"job_id"`
	GroupID int64              `json:"group_id"`
	Name    string             `json:"name"`
	Attempt int                `json:"attempt"`
	Outcome queue.BuildOutcome `json:"outcome"`
}

func built(c jobgraph.Claim, out outcome) *builtOutput {
	return &builtOutput{JobID: c.JobID, GroupID: c.GroupID, Name: c.Name, Attempt: c.Attempt, Outcome: out.result}
}

// take finds the build the token stands for. A token is a dispatch token: it claims the best ready
// job of its target. A token that River UI's Retry delivered again after it had carried a build
// (it ended with that build, so only Retry delivers it again) stands for that build instead: a
// failed or cancelled job runs again (rerun); a complete one is not rebuilt, nor one retried or
// handed out again since, and the token ends cancelled saying so. take ends the token itself whenever it returns
// no claim and no error.
func (w *Worker) take(ctx context.Context, job *river.Job[queue.BuildRunArgs]) (jobgraph.Claim, bool, error) {
	retried := uiaction.Retried(job.JobRow)
	var prev tokenOutput
	if out := uiaction.Output(job.JobRow); out != nil {
		if err := json.Unmarshal(out, &prev); err != nil {
			return jobgraph.Claim{}, false, river.JobCancel(fmt.Errorf("decode the output of token %d: %w", job.ID, err))
		}
	}
	if retried && prev.Build != nil {
		return w.rerun(ctx, job, *prev.Build)
	}
	claim, ok, err := jobgraph.ClaimNext(ctx, w.Pool, job.Args.Target, w.ID, w.Lease)
	switch {
	case err != nil && queue.CancelledRemotely(ctx):
		const did = "stopped the token before it claimed a job; nothing was built"
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionCancel, did)
		if err := jobgraph.RecordAction(context.WithoutCancel(ctx), w.Pool, nil, nil, "River UI cancel of build_run token %d: %s", job.ID, did); err != nil {
			w.Logger.Warn("record River UI action", "job_id", job.ID, "error", err)
		}
		return claim, false, river.JobCancel(fmt.Errorf("cancelled in River UI before it claimed a job: %w", err))
	case err != nil:
		return claim, false, err
	case !ok:
		return claim, false, w.nothingToBuild(ctx, job, retried)
	}
	if retried {
		did := fmt.Sprintf("the token claimed job %d (%s) of group %d and builds it", claim.JobID, claim.Name, claim.GroupID)
		if err := jobgraph.RecordAction(ctx, w.Pool, &claim.GroupID, &claim.JobID, "River UI retry of build_run token %d: %s", job.ID, did); err != nil {
			w.Logger.Warn("record River UI action", "job_id", job.ID, "error", err)
		}
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, did, "group_id", claim.GroupID, "build_job_id", claim.JobID)
	}
	return claim, true, nil
}

// rerun runs prev again for River UI's Retry of the token that carried it, and claims the best
// ready job of the target: prev itself, unless an older group's job comes first (prev then keeps
// its place among the ready jobs, and the token of that job, when it comes, claims it).
func (w *Worker) rerun(ctx context.Context, job *river.Job[queue.BuildRunArgs], prev builtOutput) (jobgraph.Claim, bool, error) {
	reason := fmt.Sprintf("River UI retry of build_run token %d, which ran job %d on attempt %d (%s)", job.ID, prev.JobID, prev.Attempt, prev.Outcome)
	var r jobgraph.Rerun
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) (err error) {
		r, err = w.Graph.RerunTx(ctx, tx, prev.JobID, reason, w.ID, w.Lease)
		return err
	})
	switch {
	case errors.Is(err, problem.ErrConflict) && r.State == jobgraph.Complete:
		return jobgraph.Claim{}, false, w.refuse(ctx, job, prev, fmt.Errorf(
			"build %s (job %d, group %d) already succeeded: a token does not rebuild a complete job; submit a new group with POST /v1/groups to build it again",
			prev.Name, prev.JobID, prev.GroupID))
	case errors.Is(err, problem.ErrConflict):
		return jobgraph.Claim{}, false, w.refuse(ctx, job, prev, fmt.Errorf(
			"build %s (job %d, group %d) is %s, neither failed nor cancelled (it was retried or handed out again since this token ran it): nothing for this token to run again; follow it with GET /v1/groups/%d",
			prev.Name, prev.JobID, prev.GroupID, r.State, prev.GroupID))
	case errors.Is(err, problem.ErrNotFound):
		return jobgraph.Claim{}, false, w.refuse(ctx, job, prev, fmt.Errorf("build %s (job %d, group %d) no longer exists; submit it again with POST /v1/groups",
			prev.Name, prev.JobID, prev.GroupID))
	case err != nil:
		return jobgraph.Claim{}, false, err
	}
	did := fmt.Sprintf("job %d (%s) of group %d runs again with %d dependents that had failed or been cancelled", prev.JobID, prev.Name, prev.GroupID, len(r.Reset)-1)
	if r.Claimed {
		did += fmt.Sprintf("; the token claimed job %d (%s) and builds it", r.Claim.JobID, r.Claim.Name)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, did, "group_id", prev.GroupID, "build_job_id", prev.JobID)
	if !r.Claimed { // the job got a token of its own
		return r.Claim, false, w.nothingToBuild(ctx, job, false)
	}
	return r.Claim, true, nil
}

// refuse ends a token that River UI's Retry delivered again but that has nothing to run again,
// cancelled with why (and what to do instead), recording the press in the job graph's events in
// the same transaction. The token keeps the output of the build it carried.
func (w *Worker) refuse(ctx context.Context, job *river.Job[queue.BuildRunArgs], prev builtOutput, why error) error {
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		err := jobgraph.RecordAction(ctx, tx, &prev.GroupID, &prev.JobID, "River UI retry of build_run token %d: %s", job.ID, why)
		if err != nil {
			return err
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCancelled, Err: why,
			Output: tokenOutput{Target: job.Args.Target, Build: &prev}})
	})
	if err != nil {
		_ = river.RecordOutput(ctx, nil) // see report
		return fmt.Errorf("refuse the retry of token %d: %w", job.ID, err)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, why.Error(), "group_id", prev.GroupID, "build_job_id", prev.JobID)
	return nil
}

// nothingToBuild ends a token whose claim found no ready job of its target, cancelled with why: a
// token River shows completed has built something. Such a token is a spare one (its job was
// claimed through another token, or its group was cancelled); when River UI's Retry delivered it
// again (retried), the press is recorded and logged.
func (w *Worker) nothingToBuild(ctx context.Context, job *river.Job[queue.BuildRunArgs], retried bool) error {
	why := fmt.Errorf("nothing to build on target %s: this token claimed no job (the target's ready jobs, if any, were claimed through other tokens)", job.Args.Target)
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		if retried {
			if err := jobgraph.RecordAction(ctx, tx, nil, nil, "River UI retry of build_run token %d: %s", job.ID, why); err != nil {
				return err
			}
		}
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCancelled, Err: why, Output: tokenOutput{Target: job.Args.Target}})
	})
	if err != nil {
		_ = river.RecordOutput(ctx, nil) // see report
		return fmt.Errorf("end token %d, which found nothing to build: %w", job.ID, err)
	}
	if retried {
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, why.Error())
	}
	return nil
}
