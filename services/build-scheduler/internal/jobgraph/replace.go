package jobgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// Replaced says what became of a job whose attempt was lost.
type Replaced struct {
	Result
	Attempt    int   // the job's attempt now: the new one when State is Ready
	RiverJobID int64 // the new attempt's River job, when State is Ready
}

// Note says what replaced a lost attempt, for the error of its River job.
func (r Replaced) Note() string {
	switch {
	case !r.Applied:
		return ""
	case r.State == Ready:
		return fmt.Sprintf("attempt %d replaces it as River job %d", r.Attempt, r.RiverJobID)
	case r.State == CancelComplete:
		return "the build was being cancelled and is cancel_complete"
	}
	return fmt.Sprintf("that was its last attempt (%d): the job is %s", r.Attempt, r.State)
}

// ReplaceTx takes jobID from its attempt, which was lost: its worker died or lost its liveness,
// or its River job ended without a report. Guarded by the job being ready, running or
// cancel_pending under that attempt, it gives the job its next attempt and inserts that
// attempt's River job, or fails the job (with its dependents) when that was its last attempt, or
// completes its cancellation. reason says how the attempt was lost, for the job's event.
func (g *Graph) ReplaceTx(ctx context.Context, tx pgx.Tx, jobID int64, attempt int, reason string) (Replaced, error) {
	var r Replaced
	row, err := queries.JobReplace(ctx, tx, dbsqlc.JobReplaceParams{ID: jobID, Attempt: int32(attempt), Reason: reason})
	if errors.Is(err, pgx.ErrNoRows) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("replace attempt %d of job %d: %w", attempt, jobID, err)
	}
	r.Applied, r.GroupID, r.State, r.Attempt = true, row.GroupID, JobState(row.State), int(row.Attempt)
	finished := []int64{jobID}
	switch r.State {
	case Ready:
		b, err := readyRow{ID: jobID, GroupID: row.GroupID, Name: row.Name, Target: row.Target, Attempt: row.Attempt,
			Rank: row.FetchRank, Command: row.Command, Env: row.Env, Payload: row.Payload, TimeoutMs: row.TimeoutMs}.build()
		if err != nil {
			return r, err
		}
		ids, targets, err := g.dispatch(ctx, tx, []Build{b})
		if err != nil {
			return r, err
		}
		r.RiverJobID, r.Targets = ids[0], targets
	case JobFailed:
		failed, err := failDependents(ctx, tx, jobID, r.GroupID)
		if err != nil {
			return r, err
		}
		finished = append(finished, failed...)
	case CancelComplete:
		cancelled, err := cancelDependents(ctx, tx, jobID, r.GroupID)
		if err != nil {
			return r, err
		}
		finished = append(finished, cancelled...)
	}
	err = addEvent(ctx, tx, &r.GroupID, &jobID, EventAttemptLost, "attempt %d of job %d (%s) was lost: %s; %s",
		attempt, jobID, row.Name, reason, r.Note())
	if err != nil || r.State == Ready {
		return r, err
	}
	r.GroupState, err = settle(ctx, tx, r.GroupID, finished, false, "")
	return r, err
}

// CancelOneTx cancels jobID, under attempt, with its dependents that have not run, as River UI's
// Cancel of a running build does: for a build whose River job was cancelled or deleted before it
// ran (River UI's Cancel or Delete on a waiting build). It settles the group when that was its
// last job.
func (g *Graph) CancelOneTx(ctx context.Context, tx pgx.Tx, jobID int64, attempt int, reason string) (Result, error) {
	var res Result
	groupID, err := queries.JobCancelOne(ctx, tx, dbsqlc.JobCancelOneParams{ID: jobID, Attempt: int32(attempt), Reason: reason})
	if errors.Is(err, pgx.ErrNoRows) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("cancel job %d: %w", jobID, err)
	}
	res.Applied, res.GroupID, res.State = true, groupID, CancelComplete
	cancelled, err := cancelDependents(ctx, tx, jobID, groupID)
	if err != nil {
		return res, err
	}
	if err := addEvent(ctx, tx, &groupID, &jobID, EventRiverUIAction, "job %d: %s; it and %d dependents that had not run are cancel_complete",
		jobID, reason, len(cancelled)); err != nil {
		return res, err
	}
	res.GroupState, err = settle(ctx, tx, groupID, append(cancelled, jobID), false, "")
	return res, err
}

// Takeover is what the liveness sweep of any process on the build_scheduler schema does, in its
// transaction, for the build_run River jobs of a dead process (queue.Takeover): each build's
// attempt is replaced (ReplaceTx), or, when River UI's Cancel was pressed on its River job, the
// build is cancelled as that Cancel would have done had the worker lived (CancelOneTx). The note
// saying so joins the error River records on the dead attempt's River job, which the sweep then
// ends. River jobs of an earlier release, which name no attempt, are left to the sweep alone.
func (g *Graph) Takeover(ctx context.Context, tx pgx.Tx, jobs []queue.RescuedJob) (map[int64]string, error) {
	notes := map[int64]string{}
	for _, j := range jobs {
		var args queue.BuildRunArgs
		if err := json.Unmarshal(j.Args, &args); err != nil {
			return nil, fmt.Errorf("decode build_run %d: %w", j.ID, err)
		}
		if args.Attempt == 0 {
			continue
		}
		var (
			note    string
			applied bool
		)
		if j.CancelRequested {
			res, err := g.CancelOneTx(ctx, tx, args.JobID, args.Attempt, "River UI's Cancel of its River job, whose worker "+j.Process+" died")
			if err != nil {
				return nil, err
			}
			note, applied = "the build is cancel_complete, as its Cancel asked", res.Applied
		} else {
			r, err := g.ReplaceTx(ctx, tx, args.JobID, args.Attempt, "its worker "+j.Process+" died or lost its liveness")
			if err != nil {
				return nil, err
			}
			note, applied = r.Note(), r.Applied
		}
		if !applied {
			// The build had moved on: its report committed before the worker died, or the
			// group was cancelled or retried.
			job, err := GetJob(ctx, tx, args.JobID)
			if err != nil {
				return nil, err
			}
			note = fmt.Sprintf("attempt %d of build %s (job %d) had ended already: the job is %s at attempt %d", args.Attempt, args.JobName, args.JobID, job.State, job.Attempt)
		}
		notes[j.ID] = note
	}
	return notes, nil
}

// Orphan is a job that waits on a River job that is no longer there to run it.
type Orphan struct {
	JobID, GroupID int64
	Attempt        int
	State          JobState
	// RiverState is the state of the attempt's River job: "" when there is none (deleted, or
	// never inserted), else completed, discarded or cancelled; RiverAttempt is how often River ran
	// it (0: never).
	RiverState   string
	RiverAttempt int
}

// Orphans lists up to limit jobs of open groups that wait on a River job that is no longer there
// to run them (JobListOrphans), with what became of that River job (BuildRunOf).
func Orphans(ctx context.Context, db postgres.DBTX, limit int) ([]Orphan, error) {
	rows, err := queries.JobListOrphans(ctx, db, int32(limit))
	if err != nil {
		return nil, fmt.Errorf("list orphaned builds: %w", err)
	}
	out := make([]Orphan, len(rows))
	for i, r := range rows {
		o := Orphan{JobID: r.ID, GroupID: r.GroupID, Attempt: int(r.Attempt), State: JobState(r.State)}
		if o.State != Pending {
			args, err := json.Marshal(map[string]int64{"job_id": o.JobID, "attempt": int64(o.Attempt)})
			if err != nil {
				return nil, err
			}
			ended, err := queries.BuildRunOf(ctx, db, args)
			if err != nil {
				return nil, fmt.Errorf("read the River job of job %d attempt %d: %w", o.JobID, o.Attempt, err)
			}
			if len(ended) > 0 {
				o.RiverState, o.RiverAttempt = ended[0].State, int(ended[0].Attempt)
			}
		}
		out[i] = o
	}
	return out, nil
}

// AdoptTx settles an orphan on tx, under the state and attempt it was listed with (a job that
// moved on since is left alone):
//   - a pending job (from before builds were River jobs) gets its River job, as its next attempt;
//   - a build whose River job was cancelled or deleted before it ran (River UI's Cancel or Delete
//     on a waiting build) is cancelled with its dependents that have not run, as River UI's
//     Cancel of a running build would;
//   - a build whose River job ended without a report (its worker gave up on it, or Postgres lost
//     the report) gets a new attempt, or fails at its last.
//
// It returns what it did, in words.
func (g *Graph) AdoptTx(ctx context.Context, tx pgx.Tx, o Orphan) (Result, string, error) {
	switch {
	case o.State == Pending:
		row, err := queries.JobDispatchPending(ctx, tx, o.JobID)
		if errors.Is(err, pgx.ErrNoRows) {
			return Result{}, "", nil
		}
		if err != nil {
			return Result{}, "", fmt.Errorf("dispatch pending job %d: %w", o.JobID, err)
		}
		b, err := readyRow{ID: o.JobID, GroupID: row.GroupID, Name: row.Name, Target: row.Target, Attempt: row.Attempt,
			Rank: row.FetchRank, Command: row.Command, Env: row.Env, Payload: row.Payload, TimeoutMs: row.TimeoutMs}.build()
		if err != nil {
			return Result{}, "", err
		}
		ids, targets, err := g.dispatch(ctx, tx, []Build{b})
		if err != nil {
			return Result{}, "", err
		}
		did := fmt.Sprintf("job %d of group %d was pending with its dependencies complete: attempt %d is River job %d", o.JobID, row.GroupID, b.Attempt, ids[0])
		return Result{Applied: true, GroupID: row.GroupID, State: Ready, Targets: targets}, did, nil
	case o.State != CancelPending && (o.RiverState == "" || (o.RiverState == "cancelled" && o.RiverAttempt == 0)):
		how, button := "deleted", "Delete"
		if o.RiverState != "" {
			how, button = "cancelled", "Cancel"
		}
		reason := fmt.Sprintf("the River job of attempt %d was %s before it ran (River UI's %s on a waiting build)", o.Attempt, how, button)
		res, err := g.CancelOneTx(ctx, tx, o.JobID, o.Attempt, reason)
		if err != nil || !res.Applied {
			return res, "", err
		}
		return res, fmt.Sprintf("job %d: %s; it is cancel_complete", o.JobID, reason), nil
	}
	r, err := g.ReplaceTx(ctx, tx, o.JobID, o.Attempt, fmt.Sprintf("its River job ended %s without a report", o.RiverState))
	if err != nil || !r.Applied {
		return r.Result, "", err
	}
	return r.Result, fmt.Sprintf("job %d attempt %d: its River job ended %s without a report; %s", o.JobID, o.Attempt, o.RiverState, r.Note()), nil
}
