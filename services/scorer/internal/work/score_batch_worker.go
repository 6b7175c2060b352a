package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"drover.dev/queue"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/store"
)

// MaxResults bounds the entries of one score_batch job: 256 UIDs on a subnet times a handful of
// executor classes, with room to spare.
const MaxResults = 16384

// Beginner starts a transaction: a pool in production, a test's transaction (a savepoint) in
// tests, so a worker test sees and rolls back everything the worker wrote.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ScoreTimeout bounds one score_batch job: one transaction over at most MaxResults entries.
const ScoreTimeout = time.Minute

// ScoreBatchWorker works score_batch: it stores the batch's inputs, scores it against the two
// last peak batches and writes the scores, all in the transaction that completes the job. Running
// it twice writes the same rows with the same parameters. So a job whose batch is scored (or
// whose failure is recorded) is worked again only because River UI's Retry brought it back: it
// scores the batch again with the scorer's current parameters, which is what a Retry can mean.
type ScoreBatchWorker struct {
	river.WorkerDefaults[queue.ScoreBatchArgs]
	DB     Beginner
	Params scoring.Params
	Logger *slog.Logger
	// SetWeights enqueues a set_weights job in the transaction of every scoring, so that new
	// weights reach the chain without waiting for the periodic job (weights through Pylon are on).
	SetWeights bool
	Metrics    *Metrics // nil counts nothing
}

// Timeout implements river.Worker.
func (w *ScoreBatchWorker) Timeout(*river.Job[queue.ScoreBatchArgs]) time.Duration {
	return ScoreTimeout
}

// Work scores the batch. Inputs that can never be scored are recorded as a scoring failure in
// the transaction that ends the job discarded with the same error (retrying cannot fix them), and
// a scoring that River UI's Cancel stopped is recorded and cancelled the same way; database
// errors are returned so River retries.
func (w *ScoreBatchWorker) Work(ctx context.Context, job *river.Job[queue.ScoreBatchArgs]) error {
	start := time.Now()
	b, err := batchOf(job.Args)
	if err != nil {
		return w.fail(ctx, job, err)
	}
	var before store.ScoringOutcome
	err = pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		var err error
		if before, err = store.ScoringOutcomeOf(ctx, tx, job.ID, b.ID); err != nil {
			return err
		}
		if err := w.score(ctx, tx, b); err != nil {
			return err
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	switch {
	case errors.Is(err, store.ErrInputsDiffer):
		return w.fail(ctx, job, err)
	case err != nil && queue.CancelledRemotely(ctx):
		return w.cancelled(ctx, job, err)
	case err != nil:
		return err
	}
	w.Metrics.scored("scored")
	w.Logger.InfoContext(ctx, "batch scored", "batch_id", b.ID, "peak", b.Peak, "results", len(b.Results), "duration", time.Since(start))
	switch {
	case before.Scored:
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, fmt.Sprintf("scored batch %d again with the current parameters", b.ID), "batch_id", b.ID)
	case before.Failed:
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, fmt.Sprintf("scored batch %d", b.ID), "batch_id", b.ID)
	}
	return nil
}

// fail records that job's batch cannot be scored and ends the job discarded with cause, together,
// so River UI shows the scoring as failed with the same error the API's 409 gives. A job that had
// recorded its failure before was retried in River UI, and fails the same way again.
func (w *ScoreBatchWorker) fail(ctx context.Context, job *river.Job[queue.ScoreBatchArgs], cause error) error {
	var first bool
	err := pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		var err error
		if first, err = store.FailureRecord(ctx, tx, job.ID, job.Args.BatchID, cause); err != nil {
			return err
		}
		return queue.JobFailTx(ctx, tx, job, cause)
	})
	if err != nil {
		return err
	}
	w.Metrics.scored("failed")
	w.Logger.WarnContext(ctx, "scoring failed", "batch_id", job.Args.BatchID, "job_id", job.ID, "error", cause)
	if !first {
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, "failed again: "+cause.Error(), "batch_id", job.Args.BatchID)
	}
	return nil
}

// cancelled records that River UI's Cancel stopped the scoring of job's batch before it
// committed, and ends the job cancelled, in one transaction on a context that outlives the job's:
// the batch stays unscored, GET /v1/batches/{id}/scores says why, and Retry on the job scores it.
func (w *ScoreBatchWorker) cancelled(ctx context.Context, job *river.Job[queue.ScoreBatchArgs], stopped error) error {
	cause := fmt.Errorf("%s (Retry the job to score batch %d): %w", queue.CancelledInUI, job.Args.BatchID, stopped)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		if _, err := store.FailureRecord(ctx, tx, job.ID, job.Args.BatchID, cause); err != nil {
			return err
		}
		return queue.JobCancelTx(ctx, tx, job, cause)
	})
	did := fmt.Sprintf("stopped scoring batch %d: nothing scored, job cancelled", job.Args.BatchID)
	if err != nil {
		did = fmt.Sprintf("stopped scoring batch %d: nothing scored; recording it failed (%v), River cancels the job", job.Args.BatchID, err)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionCancel, did, "batch_id", job.Args.BatchID)
	if err != nil {
		return stopped
	}
	return nil
}

func (w *ScoreBatchWorker) score(ctx context.Context, tx pgx.Tx, b store.Batch) error {
	if err := store.BatchInsert(ctx, tx, b); err != nil {
		return err
	}
	history, err := store.PeakHistory(ctx, tx, b)
	if err != nil {
		return err
	}
	out := scoring.Score(scoring.Batch{Peak: b.Peak, Results: b.Results}, history, w.Params)
	if len(out.UnknownClasses) > 0 {
		w.Logger.WarnContext(ctx, "executor classes with no configured weight score 0",
			"batch_id", b.ID, "classes", out.UnknownClasses)
	}
	if err := store.ScoresReplace(ctx, tx, b.ID, out); err != nil {
		return err
	}
	if err := store.BatchMarkScored(ctx, tx, b.ID); err != nil {
		return err
	}
	if !w.SetWeights {
		return nil
	}
	if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertTx(ctx, tx, queue.SetWeightsArgs{Reason: "scored"}, nil); err != nil {
		return fmt.Errorf("enqueue set_weights after scoring batch %d: %w", b.ID, err)
	}
	return nil
}

// batchOf checks the job's arguments and converts them. A batch with no miners is valid: it is
// recorded and scores nobody.
func batchOf(args queue.ScoreBatchArgs) (store.Batch, error) {
	if args.BatchID <= 0 {
		return store.Batch{}, fmt.Errorf("score_batch: batch_id must be positive, not %d", args.BatchID)
	}
	if args.StartedAt.IsZero() {
		return store.Batch{}, fmt.Errorf("score_batch %d: started_at is missing", args.BatchID)
	}
	if len(args.Miners) > MaxResults {
		return store.Batch{}, fmt.Errorf("score_batch %d: %d entries, at most %d", args.BatchID, len(args.Miners), MaxResults)
	}
	// Postgres keeps microseconds: truncate so a redelivered job compares equal to what is stored.
	started := args.StartedAt.Truncate(time.Microsecond)
	b := store.Batch{ID: args.BatchID, StartedAt: started, Peak: args.Peak, Results: make([]scoring.Result, len(args.Miners))}
	for i, m := range args.Miners {
		b.Results[i] = scoring.Result{
			Hotkey: m.Hotkey, ExecutorClass: m.ExecutorClass, Executors: m.Executors,
			Completed: m.Completed, Excused: m.Excused, Failed: m.Failed,
		}
	}
	if err := scoring.Validate(b.Results); err != nil {
		return store.Batch{}, fmt.Errorf("score_batch %d: %w", args.BatchID, err)
	}
	return b, nil
}
