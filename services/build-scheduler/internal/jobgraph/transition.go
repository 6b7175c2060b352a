package jobgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
)

// Result says what a transition did. Applied is false when the guard matched nothing: the
// message was a repeat, came from a lost attempt, or arrived after the job was settled.
type Result struct {
	Applied    bool
	GroupID    int64
	State      JobState   // the job's new state
	GroupState GroupState // the group's state after the transition
	// Targets are the targets whose queues got build_run River jobs, to announce after the
	// commit when the Graph's inserter is a quiet one.
	Targets []string
}

// Report is the outcome of one attempt at a build, as its worker reports it.
type Report struct {
	JobID   int64
	Attempt int
	// Outcome is queue.BuildSucceeded, BuildFailed or BuildCancelled.
	Outcome queue.BuildOutcome
	// AsBuilt identifies what a successful build produced.
	AsBuilt string
	// ExitCode is the command's exit status; -1 when it did not exit on its own.
	ExitCode int
	// Error says why a failed attempt failed.
	Error string
	// LogIncomplete is set when some of the attempt's output could not be stored. The build's
	// outcome stands regardless: a dropped log never fails a job.
	LogIncomplete bool
	// WorkerID is the process that ran it, and StartedAt when River started its River job.
	WorkerID  string
	StartedAt time.Time
	// TraceParent is the W3C traceparent of the build's span when the worker traces (nil when
	// not): the builds it releases link to it when another dependency releases them.
	TraceParent *string
}

func reportParams(r Report) dbsqlc.JobReportParams {
	return dbsqlc.JobReportParams{
		ID: r.JobID, Attempt: int32(r.Attempt), Outcome: string(r.Outcome),
		AsBuilt: r.AsBuilt, ExitCode: int32(r.ExitCode), Error: r.Error, LogIncomplete: r.LogIncomplete,
		WorkerID: r.WorkerID, StartedAt: r.StartedAt, TraceParent: r.TraceParent,
	}
}

// reported is what JobReport returned: the transition, whether it emptied the job's stripe, and
// the dependents it made ready.
type reported struct {
	Result
	emptied bool
	ready   []Build
}

// report runs JobReport on db and reads its result.
func report(ctx context.Context, db dbsqlc.DBTX, r Report) (reported, error) {
	var rep reported
	row, err := queries.JobReport(ctx, db, reportParams(r))
	if errors.Is(err, pgx.ErrNoRows) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("report job %d attempt %d: %w", r.JobID, r.Attempt, err)
	}
	rep.Applied, rep.GroupID, rep.State, rep.GroupState, rep.emptied = true, row.GroupID, JobState(row.State), GroupState(row.GroupState), row.Emptied
	var rows []readyRow
	if err := json.Unmarshal(row.Ready, &rows); err != nil {
		return rep, fmt.Errorf("report job %d attempt %d: decode released jobs: %w", r.JobID, r.Attempt, err)
	}
	for i := range rows {
		rows[i].GroupID = rep.GroupID
	}
	rep.ready, err = builds(rows)
	return rep, err
}

// ReportTx applies a worker's report on tx: JobReport and then what it leaves to do, the
// dependents of a failed job failed with it, River jobs for the dependents it made ready and
// the group settled when this was its last job. A report of an instant job that releases nothing
// is one round trip.
func (g *Graph) ReportTx(ctx context.Context, tx pgx.Tx, r Report) (Result, error) {
	rep, err := report(ctx, tx, r)
	if err != nil || !rep.Applied {
		return rep.Result, err
	}
	return g.afterReport(ctx, tx, r, rep)
}

// Report applies a worker's report as ReportTx does, in a transaction of its own on pool that
// begins in the same round trip as JobReport (see beginWith), and runs also in it, given the
// result, before it commits: the end of the build's River job when the build failed or was
// cancelled, so River's job state and the job graph's commit together (a succeeded build's River
// job is completed by River once the worker returns). also may be nil; an error it returns rolls
// the report back.
func (g *Graph) Report(ctx context.Context, pool *pgxpool.Pool, r Report, also func(pgx.Tx, Result) error) (Result, error) {
	return g.report(ctx, pool, r, "", also)
}

// ReportLazily is Report whose commit does not wait for the WAL flush: synchronous_commit goes
// back off, for the transaction, in the same round trip as the report's statement (which set it
// on). Only a crash of Postgres itself can lose such a report, with what it released, and
// nothing can commit on top of it (a later synchronous commit flushes it too): the job stays
// at that attempt, and once River has ended its River job the scheduler's reaper gives it a new
// attempt (work.Reaper). A build-worker reports so the builds that cost less to run again than the
// flush costs to wait for (BUILD_WORKER_DURABLE_AFTER).
func (g *Graph) ReportLazily(ctx context.Context, pool *pgxpool.Pool, r Report, also func(pgx.Tx, Result) error) (Result, error) {
	return g.report(ctx, pool, r, `SELECT set_config('synchronous_commit', 'off', true)`, also)
}

func (g *Graph) report(ctx context.Context, pool *pgxpool.Pool, r Report, then string, also func(pgx.Tx, Result) error) (Result, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("report job %d attempt %d: %w", r.JobID, r.Attempt, err)
	}
	defer conn.Release()
	db := &beginWith{conn: conn.Conn(), then: then}
	rep, err := report(ctx, db, r)
	tx, closeErr := db.close()
	if tx != nil {
		defer func() { _ = tx.Rollback(ctx) }() // a no-op once committed
	}
	if err == nil && closeErr != nil {
		err = fmt.Errorf("report job %d attempt %d: %w", r.JobID, r.Attempt, closeErr)
	}
	if err != nil {
		return rep.Result, err
	}
	res := rep.Result
	if rep.Applied {
		if res, err = g.afterReport(ctx, tx, r, rep); err != nil {
			return res, err
		}
	}
	if also != nil {
		if err := also(tx, res); err != nil {
			return res, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("commit report of job %d attempt %d: %w", r.JobID, r.Attempt, err)
	}
	return res, nil
}

// afterReport does what an applied report's statement leaves to do: a failed job's dependents
// failed with it, a cancelled job's dependents cancelled with it (they can never run), a
// completed job's released dependents dispatched, and the group settled when this was its last
// job.
func (g *Graph) afterReport(ctx context.Context, tx pgx.Tx, r Report, rep reported) (Result, error) {
	res := rep.Result
	var finished []int64
	switch res.State {
	case JobFailed:
		failed, err := failDependents(ctx, tx, r.JobID, res.GroupID)
		if err != nil {
			return res, err
		}
		finished = append(failed, r.JobID)
		msg := fmt.Sprintf("job %d failed on attempt %d (exit %d): %s", r.JobID, r.Attempt, r.ExitCode, r.Error)
		if err := addEvent(ctx, tx, &res.GroupID, &r.JobID, EventJobFailed, "%s", msg); err != nil {
			return res, err
		}
	case CancelComplete:
		// JobReport counted the job itself off its stripe.
		cancelled, err := cancelDependents(ctx, tx, r.JobID, res.GroupID)
		if err != nil {
			return res, err
		}
		finished = cancelled
	case Complete:
		var err error
		if _, res.Targets, err = g.dispatch(ctx, tx, rep.ready); err != nil {
			return res, err
		}
	}
	var err error
	if res.GroupState, err = settle(ctx, tx, res.GroupID, finished, rep.emptied, res.GroupState); err != nil {
		return res, err
	}
	if res.GroupState == GroupQueued { // its first report: no worker marked a build of it running yet
		if err := queries.GroupDispatching(ctx, tx, res.GroupID); err != nil {
			return res, fmt.Errorf("group %d dispatching: %w", res.GroupID, err)
		}
		res.GroupState = GroupDispatching
	}
	return res, nil
}

// failDependents marks every transitive dependent of jobID that has not run yet
// dependency_failed and returns the ids it marked. The jobs are looked up by id and locked in id
// order, as in JobReport.
func failDependents(ctx context.Context, tx pgx.Tx, jobID, groupID int64) ([]int64, error) {
	failed, err := queries.JobFailDependents(ctx, tx, dbsqlc.JobFailDependentsParams{JobID: jobID, GroupID: groupID})
	if err != nil {
		return nil, fmt.Errorf("fail dependents of job %d: %w", jobID, err)
	}
	return failed, nil
}

// cancelDependents marks every transitive dependent of jobID that has not run yet
// cancel_complete, as a cancelled job's dependents can never run, and returns the ids it marked.
// Under a group's cancel they are cancelled already and it marks none.
func cancelDependents(ctx context.Context, tx pgx.Tx, jobID, groupID int64) ([]int64, error) {
	cancelled, err := queries.JobCancelDependents(ctx, tx, dbsqlc.JobCancelDependentsParams{JobID: jobID, GroupID: groupID})
	if err != nil {
		return nil, fmt.Errorf("cancel dependents of job %d: %w", jobID, err)
	}
	return cancelled, nil
}
