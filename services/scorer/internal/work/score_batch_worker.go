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

// ScoreBatchWorker works score_batch: it stores the batch's inputs, scores it against the two
// last peak batches and writes the scores, all in the transaction that completes the job. Running
// it twice writes the same rows.
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

// Work scores the batch. Inputs that can never be scored are recorded as a scoring failure in
// the transaction that cancels the job with the same error (retrying cannot fix them); database
// errors are returned so River retries.
func (w *ScoreBatchWorker) Work(ctx context.Context, job *river.Job[queue.ScoreBatchArgs]) error {
	start := time.Now()
	b, err := batchOf(job.Args)
	if err != nil {
		return w.fail(ctx, job, err)
	}
	err = pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		if err := w.score(ctx, tx, b); err != nil {
			return err
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if errors.Is(err, store.ErrInputsDiffer) {
		return w.fail(ctx, job, err)
	}
	if err != nil {
		return err
	}
	w.Metrics.scored("scored")
	w.Logger.InfoContext(ctx, "batch scored", "batch_id", b.ID, "peak", b.Peak, "results", len(b.Results), "duration", time.Since(start))
	return nil
}

// fail records that job's batch cannot be scored and ends the job discarded with cause, together,
// so River UI shows the scoring as failed with the same error the API's 409 gives.
func (w *ScoreBatchWorker) fail(ctx context.Context, job *river.Job[queue.ScoreBatchArgs], cause error) error {
	err := pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		if err := store.FailureRecord(ctx, tx, job.ID, job.Args.BatchID, cause); err != nil {
			return err
		}
		return queue.JobFailTx(ctx, tx, job, cause)
	})
	if err != nil {
		return err
	}
	w.Metrics.scored("failed")
	w.Logger.WarnContext(ctx, "scoring failed", "batch_id", job.Args.BatchID, "job_id", job.ID, "error", cause)
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
