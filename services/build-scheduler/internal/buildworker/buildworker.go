// Package buildworker is the build-worker's side of the scheduler: a River worker that takes a
// dispatch token from a target's queue, claims the best ready job of that target under a lease,
// runs its command in an empty work directory of its own (see workdirs), streams the output to
// the log store, and applies the outcome to the job graph itself (the job's transition with all
// its consequences) in the same transaction that ends its own token as the build ended
// (completed, discarded with the error, or cancelled). There is no queue hop between a build's
// end and its dependents becoming ready: when the slot takes its next token, the older group's
// next jobs are ready.
//
// While the command runs, a heartbeat extends the lease every third of it. The heartbeat is also
// how the worker hears of a cancellation (the job turned cancel_pending: kill the process and
// report cancelled) and of having lost the job (the lease expired and the reaper gave the job to
// another attempt: kill the process and report nothing, because that report would be ignored).
// River UI's Cancel on the token cancels the build's context instead: the process is killed and
// the build reported cancelled the same way. River UI's Retry on a token that carried a failed or
// cancelled build runs that build again (see take).
//
// A build's command is a process group of its own that never outlives the worker: see runGroup
// for how it dies with the worker, and reapGroups for the process that kills it when the worker
// was killed outright.
package buildworker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
)

// Worker works build_run tokens.
type Worker struct {
	river.WorkerDefaults[queue.BuildRunArgs]
	Pool    *pgxpool.Pool
	Graph   *jobgraph.Graph // applies the worker's reports and enqueues the tokens they release
	Logs    logstore.Store
	ID      string // this worker process, recorded on the jobs it claims
	Lease   time.Duration
	Logger  *slog.Logger
	Metrics *Metrics // nil counts nothing
	// Announcer announces the tokens a report inserted once it has committed, without holding
	// the slot; nil announces them in the slot with queue.NotifyInserted.
	Announcer *queue.Announcer

	// MaxJobTimeout is the longest a build may run here: a job asking for more is cut at it. It
	// must be at least the scheduler's BUILD_SCHEDULER_MAX_JOB_TIMEOUT (the longest a job may ask
	// for), or such jobs fail as timed out.
	MaxJobTimeout time.Duration
	// DurableAfter is the shortest build whose report waits for its WAL flush. A shorter build's
	// report commits asynchronously: a crash of Postgres itself (not of a worker) within the WAL
	// writer's delay can lose it, with everything it released, and the job then runs again when
	// its lease runs out, as after a lost worker, which costs less than this. Nothing later
	// can commit on top of a lost report: every synchronous commit flushes the WAL up to itself,
	// earlier reports included. Zero makes every report wait for its flush.
	DurableAfter time.Duration
	// TokenSlack is how long a token may take beyond its build: the claim, storing the last log
	// chunks, the report (TOKEN_SLACK: far more than a claim, claimPatience at most, the last log
	// chunks, 5 s each at most, and a report take).
	TokenSlack time.Duration

	groups groupReaper // kills the builds' process groups when this process dies
	dirs   workdirs    // the empty work directories of finished builds
	idle   idleSlots   // when each free slot's last token ended
}

// Close removes the work directories the worker keeps for its next builds.
func (w *Worker) Close() { w.dirs.Close() }

// reportTimeout bounds a build's report, which runs whatever happens to the token's context: the
// build ran, and its outcome is recorded unless the database cannot take it.
const reportTimeout = 30 * time.Second

// Timeout is River's timeout of a token: MaxJobTimeout + TokenSlack, the longest a live worker
// holds one. River's rescuer takes back a token running longer than that (a worker killed
// holding it) within its next pass, 30 s, so River UI shows no dead worker's token running past
// it. It cannot be shorter: River cancels a running token's work at its timeout, so a token's
// Timeout is also the longest build it may carry, and the token cannot know which build its
// claim will find before River starts it. A killed worker's build is not waiting for this: its
// lease runs out unrenewed and the scheduler's reaper hands it to another attempt within the
// lease; the rescued token then comes back as a token like any other, claiming the best ready
// job of its target or, finding none, ending cancelled.
func (w *Worker) Timeout(*river.Job[queue.BuildRunArgs]) time.Duration {
	return w.MaxJobTimeout + w.TokenSlack
}

// NextRetry retries a token that errored, or that River's rescuer took back, after as many
// seconds as its attempt instead of River's attempt^4: a token is cheap, and a ready job may be
// waiting for it.
func (w *Worker) NextRetry(job *river.Job[queue.BuildRunArgs]) time.Time {
	return time.Now().Add(time.Duration(job.Attempt) * time.Second)
}

// Work takes the build the token stands for (see take) and runs it. A token that finds nothing
// to build ends cancelled, saying so: River shows a token completed only when its build
// succeeded.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.BuildRunArgs]) error {
	w.idle.start(w.Metrics, job.Args.Target, *job.AttemptedAt)
	defer w.idle.end(w.Metrics, job.Args.Target)
	clock := newStageClock(w.Metrics)
	claim, ok, err := w.take(ctx, job)
	if err != nil || !ok {
		return err
	}
	clock.lap(stageClaim)
	return w.build(ctx, job, claim, clock)
}

// build runs a claimed job and reports it. Cancel in River UI (JobCancel on the token) kills the
// build and records it cancelled, unless it had succeeded already; the worker's shutdown leaves
// it to the lease, whose end hands the job to another worker.
func (w *Worker) build(ctx context.Context, job *river.Job[queue.BuildRunArgs], claim jobgraph.Claim, clock *stageClock) error {
	w.Metrics.claimed(job.Args.Target, job.CreatedAt)
	claim.Timeout = min(claim.Timeout, w.MaxJobTimeout)
	start := time.Now()
	out := w.attempt(ctx, claim, clock)
	took := time.Since(start)
	switch {
	case queue.CancelledRemotely(ctx):
		if out.result != queue.BuildSucceeded { // the kill, or an end the kill came too late for
			out = outcome{result: queue.BuildCancelled, exitCode: -1, err: "cancelled in River UI", logIncomplete: out.logIncomplete}
		}
	case ctx.Err() != nil:
		// Shutting down: the lease runs out and the reaper hands the job to another worker. River
		// makes the token available again; the output of an earlier end, if River UI's Retry
		// brought it here, must not make its next delivery a Retry again.
		_ = river.RecordOutput(ctx, nil)
		return fmt.Errorf("run job %d: %w", claim.JobID, ctx.Err())
	case out.unreported:
		w.Logger.Warn("build killed, its lease ran out unrenewed; the reaper hands the job out again", "job_id", claim.JobID, "attempt", claim.Attempt)
		_ = river.RecordOutput(ctx, tokenOutput{Target: job.Args.Target, Build: built(claim, out)})
		return river.JobCancel(fmt.Errorf("build %s (job %d) killed on attempt %d: its lease ran out without a heartbeat getting through; the scheduler's reaper hands the job to another attempt",
			claim.Name, claim.JobID, claim.Attempt))
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	res, err := w.report(rctx, job, claim, out, report{pressed: queue.CancelledRemotely(ctx), lazy: took < w.DurableAfter, clock: clock})
	if err != nil {
		return err
	}
	clock.end(stageCommit)
	w.Metrics.built(job.Args.Target, out.result, took)
	if queue.CancelledRemotely(ctx) {
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionCancel, cancelDid(claim, out, res), "group_id", claim.GroupID, "build_job_id", claim.JobID)
	}
	w.Logger.Info("build ran", "job_id", claim.JobID, "group_id", claim.GroupID, "name", claim.Name, "target", job.Args.Target,
		"attempt", claim.Attempt, "outcome", out.result, "exit_code", out.exitCode, "duration", took)
	return nil
}

// report applies the outcome to the job graph and ends the token in one transaction: the job's
// transition with all its consequences (dependents ready and their tokens inserted, group state,
// events), and the token completed when the build succeeded, discarded with the error when it
// failed, cancelled when it was cancelled. River's state of each build_run job and the
// service's state of the build so commit together, and the slot takes its next token only once
// the consequences are committed: a finished job's dependents are ready before the slot claims
// again, so the oldest group keeps the slot while it has work. The token's output names the job
// it claimed, which may not be the one its args name. A report from an attempt that lost its
// lease matches no job and changes nothing; the token then ends cancelled, saying so.
//
// Round trips: the transaction's BEGIN and the report's statement travel together; then the
// released jobs' tokens (when there are any), the token's end and the COMMIT, which waits for
// the WAL flush unless the build was shorter than DurableAfter (jobgraph.ReportLazily).
func (w *Worker) report(ctx context.Context, job *river.Job[queue.BuildRunArgs], c jobgraph.Claim, out outcome, how report) (jobgraph.Result, error) {
	args := queue.BuildReportArgs{
		JobID: c.JobID, Attempt: c.Attempt, LeaseToken: c.LeaseToken, Outcome: out.result,
		AsBuilt: out.asBuilt, ExitCode: out.exitCode, Error: out.err, LogIncomplete: out.logIncomplete,
	}
	send := w.Graph.Report
	if how.lazy {
		send = w.Graph.ReportLazily
	}
	res, err := send(ctx, w.Pool, args, func(tx pgx.Tx, res jobgraph.Result) error {
		how.clock.lap(stageReport)
		defer how.clock.lap(stageTokenEnd)
		if !res.Applied {
			w.Logger.Warn("attempt lost its lease; its report changed nothing", "job_id", c.JobID, "attempt", c.Attempt)
		}
		if how.pressed {
			if err := jobgraph.RecordAction(ctx, tx, &c.GroupID, &c.JobID, "River UI cancel of build_run token %d: %s", job.ID, cancelDid(c, out, res)); err != nil {
				return err
			}
		}
		return queue.JobEndTx(ctx, tx, job, tokenEnd(job.Args.Target, c, out, res.Applied))
	})
	if err != nil {
		// The token's output went into River's record of this attempt with JobEndTx; it must not
		// outlive the rolled-back end, or the next attempt would take itself for a Retry.
		_ = river.RecordOutput(ctx, nil)
		return res, fmt.Errorf("report job %d attempt %d: %w", c.JobID, c.Attempt, err)
	}
	w.Metrics.reported(args, res)
	w.announceTokens(ctx, c, res.Targets)
	return res, nil
}

// report says how a report commits.
type report struct {
	pressed bool // River UI's Cancel reached the token: the report's transaction records what it did
	lazy    bool // the build was shorter than DurableAfter: the commit does not wait for the WAL flush
	clock   *stageClock
}

// announceTokens tells the workers of targets that tokens were inserted for them, now that they are
// committed (queue.NotifyInserted says why not inside the report's transaction). A lost
// announcement costs only the producers' next poll.
func (w *Worker) announceTokens(ctx context.Context, c jobgraph.Claim, targets []string) {
	queues := make([]string, len(targets))
	for i, t := range targets {
		queues[i] = queue.BuildQueue(t)
	}
	if w.Announcer != nil {
		w.Announcer.Announce(queues...)
		return
	}
	if err := queue.NotifyInserted(ctx, w.Pool, queue.BuildScheduler, queues...); err != nil {
		w.Logger.Warn("announce dispatch tokens", "job_id", c.JobID, "error", err)
	}
}

// cancelDid says what River UI's Cancel of a running token did.
func cancelDid(c jobgraph.Claim, out outcome, res jobgraph.Result) string {
	switch {
	case out.result != queue.BuildCancelled:
		return fmt.Sprintf("came after build %s (job %d) had ended %s on attempt %d; that outcome stands", c.Name, c.JobID, out.result, c.Attempt)
	case !res.Applied:
		return fmt.Sprintf("killed build %s (job %d) on attempt %d, whose lease had run out already: the job is the reaper's to hand out again", c.Name, c.JobID, c.Attempt)
	}
	return fmt.Sprintf("killed build %s (job %d) on attempt %d; the job and its dependents that had not run are cancelled; group %d is %s",
		c.Name, c.JobID, c.Attempt, c.GroupID, res.GroupState)
}

// tokenEnd is how a token ends for the attempt it carried, given whether its report applied.
func tokenEnd(target string, c jobgraph.Claim, out outcome, applied bool) queue.JobEnd {
	end := queue.JobEnd{State: rivertype.JobStateCompleted, Output: tokenOutput{Target: target, Build: built(c, out)}}
	switch {
	case !applied:
		end.State = rivertype.JobStateCancelled
		end.Err = fmt.Errorf("attempt %d of build %s (job %d, group %d) had lost its lease: the job went to another attempt, and this attempt's outcome (%s) changed nothing",
			c.Attempt, c.Name, c.JobID, c.GroupID, out.result)
	case out.result == queue.BuildFailed:
		end.State = rivertype.JobStateDiscarded
		end.Err = fmt.Errorf("build %s (job %d, group %d) failed on attempt %d: exit %d: %s",
			c.Name, c.JobID, c.GroupID, c.Attempt, out.exitCode, out.err)
	case out.result == queue.BuildCancelled:
		end.State = rivertype.JobStateCancelled
		end.Err = fmt.Errorf("build %s (job %d, group %d) cancelled on attempt %d", c.Name, c.JobID, c.GroupID, c.Attempt)
	}
	return end
}
