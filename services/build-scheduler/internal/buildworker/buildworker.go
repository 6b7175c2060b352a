// Package buildworker is the build-worker's side of the scheduler: a River worker whose
// build_run River jobs are builds. River's fetch hands the worker one attempt at one job, named
// by the River job's args; the worker runs exactly that job's command in an empty work directory
// of its own (see workdirs), streams the output to the log store, and applies the outcome to the
// job graph itself (the job's transition with all its consequences, its dependents' River jobs
// among them) in one transaction, in which a failed or cancelled build also ends its River job
// discarded or cancelled with the error. A succeeded build's River job is completed by River
// once Work returns. There is no queue hop between a build's end and its dependents becoming
// ready: when the slot fetches again, the older group's next jobs are ready.
//
// A build that runs longer than a mark's period is recorded running, in batches off its critical
// path (marker). River UI's Cancel on a running build, and the scheduler's cancel of its group,
// reach the build through River's cancel of its River job: the process group is killed and the
// build reported cancelled. A build whose process loses its liveness (queue.ErrLivenessLost) or
// shuts down is killed and given a new attempt, its River job ending with an error naming it.
// River UI's Retry of a failed or cancelled build runs it again as a new attempt (see retried).
//
// A build's command is a process group of its own that never outlives the worker: see runGroup
// for how it dies with the worker, and reapGroups for the process that kills it when the worker
// was killed outright.
package buildworker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/tracing"
)

// Worker works build_run River jobs.
type Worker struct {
	river.WorkerDefaults[queue.BuildRunArgs]
	Pool    *pgxpool.Pool
	Graph   *jobgraph.Graph // applies the worker's reports and inserts the River jobs they release
	Logs    logstore.Store
	ID      string // this worker process, recorded on the builds it runs
	Logger  *slog.Logger
	Metrics *Metrics // nil counts nothing
	// Announcer announces the River jobs a report inserted once it has committed, without
	// holding the slot; nil announces them in the slot with queue.NotifyInserted.
	Announcer *queue.Announcer
	// Marker records the builds this worker runs as running, in batches; nil records none (the
	// report records the worker and start time either way).
	Marker *Marker

	// MaxJobTimeout is the longest a build may run here: a job asking for more is cut at it. It
	// must be at least the scheduler's BUILD_SCHEDULER_MAX_JOB_TIMEOUT (the longest a job may ask
	// for), or such jobs fail as timed out.
	MaxJobTimeout time.Duration
	// DurableAfter is the shortest build whose report waits for its WAL flush. A shorter build's
	// report commits asynchronously: a crash of Postgres itself (not of a worker) within the WAL
	// writer's delay can lose it, with everything it released, and the build then runs again as
	// a new attempt once the scheduler's reaper finds its River job ended without a report, which
	// costs less than the wait. Nothing later can commit on top of a lost report: every
	// synchronous commit flushes the WAL up to itself, earlier reports included. Zero makes every
	// report wait for its flush.
	DurableAfter time.Duration
	// Slack is how long a build's River job may take beyond the build: the last log chunks and
	// the report (BUILD_WORKER_SLACK).
	Slack time.Duration

	groups groupReaper // kills the builds' process groups when this process dies
	dirs   workdirs    // the empty work directories of finished builds
	idle   idleSlots   // when each free slot's last build ended
}

// Close removes the work directories the worker keeps for its next builds.
func (w *Worker) Close() { w.dirs.Close() }

// reportTimeout bounds a build's report, which runs whatever happens to the River job's context:
// the build ran, and its outcome is recorded unless the database cannot take it.
const reportTimeout = 30 * time.Second

// Timeout is River's timeout of a build's River job: the build's own timeout, cut at
// MaxJobTimeout, plus Slack. River cancels the work at it; a dead worker's River jobs do not
// wait for it, the liveness sweep gives them back.
func (w *Worker) Timeout(job *river.Job[queue.BuildRunArgs]) time.Duration {
	if job == nil || job.Args.TimeoutMS <= 0 {
		return w.MaxJobTimeout + w.Slack
	}
	return min(time.Duration(job.Args.TimeoutMS)*time.Millisecond, w.MaxJobTimeout) + w.Slack
}

// Work runs the build job's args name, as the attempt they name. A River job that River UI's
// Retry brought back runs its build again as a new attempt (retried); one of an earlier release,
// which names no attempt, ends cancelled.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.BuildRunArgs]) error {
	w.idle.start(w.Metrics, job.Args.Target, *job.AttemptedAt)
	defer w.idle.end(w.Metrics, job.Args.Target)
	if job.Args.Attempt == 0 {
		return river.JobCancel(fmt.Errorf("a build_run of an earlier release, which names no attempt: the scheduler gives job %d a River job of its own", job.Args.JobID))
	}
	if !fresh(job.JobRow) {
		return w.retried(ctx, job)
	}
	b := jobgraph.BuildOf(job.Args)
	traceBuild(ctx, job.JobRow, b, w.ID)
	w.Marker.start(job.ID, b, w.ID, *job.AttemptedAt)
	defer w.Marker.done(job.ID)
	return w.build(ctx, job, b, newStageClock(w.Metrics))
}

// fresh says whether job is being run for the first time as River inserted it: River UI's Retry
// brings a job back with a later attempt, or with a scheduled_at of now, past its creation,
// where the scheduler's order puts every build's in the past (queue.BuildOrder).
func fresh(job *rivertype.JobRow) bool {
	return job.Attempt == 1 && !job.ScheduledAt.After(job.CreatedAt)
}

// build runs b and reports it. Cancel in River UI, or a cancel of the group, kills the build and
// records it cancelled, unless it had succeeded already. A worker that shuts down, or loses its
// liveness, kills it and gives the job a new attempt (lose).
func (w *Worker) build(ctx context.Context, job *river.Job[queue.BuildRunArgs], b jobgraph.Build, clock *stageClock) error {
	w.Metrics.started(job.Args.Target, job.CreatedAt, *job.AttemptedAt)
	b.Timeout = min(b.Timeout, w.MaxJobTimeout)
	if b.Timeout <= 0 {
		b.Timeout = w.MaxJobTimeout
	}
	start := time.Now()
	out := w.attempt(ctx, b, clock)
	took := time.Since(start)
	switch {
	case queue.CancelledRemotely(ctx):
		if out.result != queue.BuildSucceeded { // the kill, or an end the kill came too late for
			out = outcome{result: queue.BuildCancelled, exitCode: -1, err: "cancelled", logIncomplete: out.logIncomplete}
		}
	case ctx.Err() != nil:
		return w.lose(ctx, job, b)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	pressed := queue.CancelledRemotely(ctx)
	res, err := w.report(rctx, job, b, out, report{pressed: pressed, lazy: took < w.DurableAfter, clock: clock})
	if err != nil {
		return err
	}
	clock.end(stageCommit)
	w.Metrics.built(job.Args.Target, out.result, took)
	traceOutcome(ctx, out)
	if pressed {
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionCancel, cancelDid(b, out, res), "group_id", b.GroupID, "build_job_id", b.JobID)
	}
	w.Logger.InfoContext(ctx, "build ran", "job_id", b.JobID, "group_id", b.GroupID, "name", b.Name, "target", b.Target,
		"attempt", b.Attempt, "outcome", out.result, "exit_code", out.exitCode, "duration", took)
	return nil
}

// traceBuild names the build's span after the build and records on it what an operator looks for
// in its trace: the group, the job, the attempt and the worker that runs it, and links to the
// spans of its dependencies other than its parent, the one whose report released it
// (jobgraph.LinksKey). The span is otelriver's of the River job; it is not recorded unless the
// process traces.
func traceBuild(ctx context.Context, job *rivertype.JobRow, b jobgraph.Build, worker string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	var meta map[string]json.RawMessage
	var links []string
	if json.Unmarshal(job.Metadata, &meta) == nil && json.Unmarshal(meta[jobgraph.LinksKey], &links) == nil {
		for _, l := range links {
			if sc := tracing.SpanContext(l); sc.IsValid() {
				span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("build.link", "dependency")}})
			}
		}
	}
	span.SetName("build " + b.Name)
	span.SetAttributes(
		attribute.Int64("build.group_id", b.GroupID), attribute.Int64("build.job_id", b.JobID),
		attribute.String("build.name", b.Name), attribute.String("build.target", b.Target),
		attribute.Int("build.attempt", b.Attempt), attribute.String("build.worker", worker),
	)
}

// traceOutcome records how the build ended on its span.
func traceOutcome(ctx context.Context, out outcome) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("build.outcome", string(out.result)), attribute.Int("build.exit_code", out.exitCode))
	if out.result != queue.BuildSucceeded {
		// An event, not the span's status: the River job succeeded (it recorded the outcome),
		// and otelriver sets the status from the job's error when the span ends.
		span.RecordError(errors.New(cmp.Or(out.err, string(out.result))))
	}
}

// lose gives b's job a new attempt after this worker killed the build without an outcome: it is
// shutting down, or it lost its liveness (a sweep may then have given the job a new attempt
// already, and this changes nothing). The new attempt's River job and the end of this one, with
// an error naming it, commit together. If the database cannot take it, the River job ends with
// the error as River ends it, and the scheduler's reaper gives the job its new attempt.
func (w *Worker) lose(ctx context.Context, job *river.Job[queue.BuildRunArgs], b jobgraph.Build) error {
	why := "its worker " + w.ID + " shut down"
	if errors.Is(context.Cause(ctx), queue.ErrLivenessLost) {
		why = "its worker " + w.ID + " lost its liveness"
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	var r jobgraph.Replaced
	err := pgx.BeginFunc(rctx, w.Pool, func(tx pgx.Tx) (err error) {
		if r, err = w.Graph.ReplaceTx(rctx, tx, b.JobID, b.Attempt, why); err != nil {
			return err
		}
		cause := fmt.Errorf("build %s (job %d, group %d) attempt %d killed: %s", b.Name, b.JobID, b.GroupID, b.Attempt, why)
		if note := r.Note(); note != "" {
			cause = fmt.Errorf("%w; %s", cause, note)
		}
		err = queue.JobEndTx(rctx, tx, job, queue.JobEnd{State: rivertype.JobStateCancelled, Err: cause})
		if errors.Is(err, queue.ErrJobNotRunning) && !r.Applied {
			return nil // a sweep gave the job a new attempt and ended this River job first
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("build %s (job %d) attempt %d killed (%s); giving it a new attempt: %w", b.Name, b.JobID, b.Attempt, why, err)
	}
	w.announce(rctx, b, r.Targets)
	w.Logger.WarnContext(ctx, "build killed and given a new attempt", "job_id", b.JobID, "attempt", b.Attempt, "why", why, "replaced", r.Note())
	return nil
}

// report applies the outcome to the job graph in one transaction: the job's transition with all
// its consequences (dependents ready and their River jobs inserted, group state, events), and,
// for a build that failed or was cancelled, the end of its River job, discarded or cancelled
// with the error. River's state of the build and the service's commit together, except for a
// success, whose River job River completes once Work returns. The slot fetches its next build
// only once the consequences are committed: a finished job's dependents are ready before, so the
// oldest group keeps the slot while it has work. A report of an attempt that no longer holds the
// job (it was cancelled, or given another attempt) changes nothing, and the River job ends
// cancelled saying so.
//
// Round trips: the transaction's BEGIN and the report's statement travel together; then the
// released jobs' River jobs (when there are any), the River job's end for a failure, and the
// COMMIT, which waits for the WAL flush unless the build was shorter than DurableAfter (how.lazy).
func (w *Worker) report(ctx context.Context, job *river.Job[queue.BuildRunArgs], b jobgraph.Build, out outcome, how report) (jobgraph.Result, error) {
	rep := jobgraph.Report{
		JobID: b.JobID, Attempt: b.Attempt, Outcome: out.result, AsBuilt: out.asBuilt, ExitCode: out.exitCode,
		Error: out.err, LogIncomplete: out.logIncomplete, WorkerID: w.ID, StartedAt: *job.AttemptedAt,
		TraceParent: tracing.Parent(ctx),
	}
	send := w.Graph.Report
	if how.lazy {
		send = w.Graph.ReportLazily
	}
	res, err := send(ctx, w.Pool, rep, func(tx pgx.Tx, res jobgraph.Result) error {
		how.clock.lap(stageReport)
		if !res.Applied {
			w.Logger.WarnContext(ctx, "attempt no longer held its job; its report changed nothing", "job_id", b.JobID, "attempt", b.Attempt)
		}
		if how.pressed {
			if err := jobgraph.RecordAction(ctx, tx, &b.GroupID, &b.JobID, "River UI cancel of build_run %d: %s", job.ID, cancelDid(b, out, res)); err != nil {
				return err
			}
		}
		end, ok := riverEnd(b, out, res.Applied)
		if !ok {
			return nil
		}
		err := queue.JobEndTx(ctx, tx, job, end)
		if errors.Is(err, queue.ErrJobNotRunning) && !res.Applied {
			return nil // a sweep gave the job a new attempt and ended this River job first
		}
		return err
	})
	if err != nil {
		return res, fmt.Errorf("report job %d attempt %d: %w", b.JobID, b.Attempt, err)
	}
	w.Metrics.reported(rep, res)
	w.announce(ctx, b, res.Targets)
	return res, nil
}

// report says how a report commits.
type report struct {
	pressed bool // River UI's Cancel reached the build: the report's transaction records what it did
	lazy    bool // the build was shorter than DurableAfter: the commit does not wait for the WAL flush
	clock   *stageClock
}

// announce tells the workers of targets that River jobs were inserted for them, now that they are
// committed (queue.NotifyInserted says why not inside the report's transaction). A lost
// announcement costs only the producers' next poll.
func (w *Worker) announce(ctx context.Context, b jobgraph.Build, targets []string) {
	queues := make([]string, len(targets))
	for i, t := range targets {
		queues[i] = queue.BuildQueue(t)
	}
	if w.Announcer != nil {
		w.Announcer.Announce(queues...)
		return
	}
	if err := queue.NotifyInserted(ctx, w.Pool, queue.BuildScheduler, queues...); err != nil {
		w.Logger.WarnContext(ctx, "announce builds", "job_id", b.JobID, "error", err)
	}
}

// cancelDid says what River UI's Cancel of a running build did.
func cancelDid(b jobgraph.Build, out outcome, res jobgraph.Result) string {
	switch {
	case out.result != queue.BuildCancelled:
		return fmt.Sprintf("came after build %s (job %d) had ended %s on attempt %d; that outcome stands", b.Name, b.JobID, out.result, b.Attempt)
	case !res.Applied:
		return fmt.Sprintf("killed build %s (job %d) on attempt %d, which no longer held the job (cancelled or given another attempt)", b.Name, b.JobID, b.Attempt)
	}
	return fmt.Sprintf("killed build %s (job %d) on attempt %d; the job and its dependents that had not run are cancelled; group %d is %s",
		b.Name, b.JobID, b.Attempt, b.GroupID, res.GroupState)
}

// riverEnd is how a build's River job ends in its report's transaction, given whether the report
// applied; false for a success, which River completes once Work returns.
func riverEnd(b jobgraph.Build, out outcome, applied bool) (queue.JobEnd, bool) {
	switch {
	case !applied:
		return queue.JobEnd{State: rivertype.JobStateCancelled, Err: fmt.Errorf(
			"attempt %d of build %s (job %d, group %d) no longer held the job, which was cancelled or given another attempt: its outcome (%s) changed nothing; see GET /v1/groups/%d",
			b.Attempt, b.Name, b.JobID, b.GroupID, out.result, b.GroupID)}, true
	case out.result == queue.BuildFailed:
		return queue.JobEnd{State: rivertype.JobStateDiscarded, Err: fmt.Errorf("build %s (job %d, group %d) failed on attempt %d: exit %d: %s",
			b.Name, b.JobID, b.GroupID, b.Attempt, out.exitCode, out.err)}, true
	case out.result == queue.BuildCancelled:
		return queue.JobEnd{State: rivertype.JobStateCancelled, Err: fmt.Errorf("build %s (job %d, group %d) cancelled on attempt %d",
			b.Name, b.JobID, b.GroupID, b.Attempt)}, true
	}
	return queue.JobEnd{}, false
}
