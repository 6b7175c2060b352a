// Package buildworker is the build-worker's side of the scheduler: a River worker that takes a
// dispatch token from a target's queue, claims the best ready job of that target under a lease,
// runs its command in a fresh temporary directory, streams the output to the log store, and
// applies the outcome to the job graph itself (the job's transition with all its consequences)
// in the same transaction that ends its own token as the build ended (completed, discarded with
// the error, or cancelled). There is no queue hop between a build's end and its dependents
// becoming ready: when the slot takes its next token, the older group's next jobs are ready.
//
// While the command runs, a heartbeat extends the lease every third of it. The heartbeat is also
// how the worker hears of a cancellation (the job turned cancel_pending: kill the process and
// report cancelled) and of having lost the job (the lease expired and the reaper gave the job to
// another attempt: kill the process and report nothing, because that report would be ignored).
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

	groups groupReaper // kills the builds' process groups when this process dies
}

// Timeout disables River's job timeout: each job carries its own, enforced by run.
func (w *Worker) Timeout(*river.Job[queue.BuildRunArgs]) time.Duration { return -1 }

// Work claims a job for the token's target and runs it; a token that finds nothing to claim
// completes at once (River completes it when Work returns nil).
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.BuildRunArgs]) error {
	claim, ok, err := jobgraph.ClaimNext(ctx, w.Pool, job.Args.Target, w.ID, w.Lease)
	if err != nil || !ok {
		return err
	}
	w.Metrics.claimed(job.Args.Target, job.CreatedAt)
	start := time.Now()
	out := w.attempt(ctx, claim)
	if ctx.Err() != nil {
		// Shutting down: the lease runs out and the reaper hands the job to another worker.
		return fmt.Errorf("run job %d: %w", claim.JobID, ctx.Err())
	}
	took := time.Since(start)
	if out.unreported {
		w.Logger.Warn("build killed, its lease ran out unrenewed; the reaper hands the job out again", "job_id", claim.JobID, "attempt", claim.Attempt)
		return nil
	}
	if err := w.report(ctx, job, claim, out); err != nil {
		return err
	}
	w.Metrics.built(job.Args.Target, out.result, took)
	w.Logger.Info("build ran", "job_id", claim.JobID, "group_id", claim.GroupID, "name", claim.Name, "target", job.Args.Target,
		"attempt", claim.Attempt, "outcome", out.result, "exit_code", out.exitCode, "duration", took)
	return nil
}

// report applies the outcome to the job graph and ends the token in one transaction: the job's
// transition with all its consequences (dependents ready and their tokens enqueued, group state,
// events), and the token completed when the build succeeded, discarded with the error when it
// failed, cancelled when it was cancelled. River's state of each build_run job and the
// service's state of the build so commit together, and the slot takes its next token only once
// the consequences are committed: a finished job's dependents are ready before the slot claims
// again, so the oldest group keeps the slot while it has work. The token's metadata names the
// job it claimed, which may not be the one its args name. A report from an attempt that lost
// its lease matches no job and changes nothing; the token then completes.
//
// Round trips: the transaction's BEGIN, the report's statement and, for a build that
// succeeded, the token's end travel together; then River's insert of the released jobs' tokens
// (when there are any) and the COMMIT, together too (the worker's Graph is Announced). A failed
// or cancelled build's token end waits for the report's result, one round trip more.
func (w *Worker) report(ctx context.Context, job *river.Job[queue.BuildRunArgs], c jobgraph.Claim, out outcome) error {
	args := queue.BuildReportArgs{
		JobID: c.JobID, Attempt: c.Attempt, LeaseToken: c.LeaseToken, Outcome: out.result,
		AsBuilt: out.asBuilt, ExitCode: out.exitCode, Error: out.err, LogIncomplete: out.logIncomplete,
	}
	end := tokenEnd(c, out)
	var send func(*pgx.Batch) error
	if end.State == rivertype.JobStateCompleted {
		// A succeeded build's token completes whether or not the report applies (below), so its
		// end need not wait for the report's result: it travels with the report's statement.
		send = func(b *pgx.Batch) error { return queue.BatchJobEnd(ctx, b, job, end) }
	}
	res, err := w.Graph.ReportWith(ctx, w.Pool, args, send, func(tx pgx.Tx, res jobgraph.Result) error {
		if !res.Applied {
			w.Logger.Warn("attempt lost its lease; its report changed nothing", "job_id", c.JobID, "attempt", c.Attempt)
		}
		if send != nil {
			return nil
		}
		if !res.Applied {
			end = queue.JobEnd{State: rivertype.JobStateCompleted, Metadata: end.Metadata}
		}
		return queue.JobEndTx(ctx, tx, job, end)
	})
	if err != nil {
		return fmt.Errorf("report job %d attempt %d: %w", c.JobID, c.Attempt, err)
	}
	w.Metrics.reported(args, res)
	// The tokens of the jobs the report made ready are announced now that they are committed
	// (queue.NotifyInserted says why not inside the report's transaction). A lost announcement
	// costs only the producers' next poll.
	queues := make([]string, len(res.Targets))
	for i, t := range res.Targets {
		queues[i] = queue.BuildQueue(t)
	}
	if w.Announcer != nil {
		w.Announcer.Announce(queues...)
		return nil
	}
	if err := queue.NotifyInserted(ctx, w.Pool, queue.BuildScheduler, queues...); err != nil {
		w.Logger.Warn("announce dispatch tokens", "job_id", c.JobID, "error", err)
	}
	return nil
}

// tokenEnd is how a token ends for the attempt it carried.
func tokenEnd(c jobgraph.Claim, out outcome) queue.JobEnd {
	end := queue.JobEnd{State: rivertype.JobStateCompleted, Metadata: map[string]any{"build": map[string]any{
		"job_id": c.JobID, "group_id": c.GroupID, "name": c.Name, "attempt": c.Attempt, "outcome": out.result,
	}}}
	switch out.result {
	case queue.BuildFailed:
		end.State = rivertype.JobStateDiscarded
		end.Err = fmt.Errorf("build %s (job %d, group %d) failed on attempt %d: exit %d: %s",
			c.Name, c.JobID, c.GroupID, c.Attempt, out.exitCode, out.err)
	case queue.BuildCancelled:
		end.State = rivertype.JobStateCancelled
		end.Err = fmt.Errorf("build %s (job %d, group %d) cancelled on attempt %d", c.Name, c.JobID, c.GroupID, c.Attempt)
	}
	return end
}
