package work

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/problem"
	"drover.dev/shared/testdb"
)

const llm = "always_on.llm.a6000"

type testBundle struct {
	tx     pgx.Tx
	worker *rivertest.Worker[queue.ScoreBatchArgs, pgx.Tx]
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	tx := testdb.Tx(t, "scorer")
	w := &ScoreBatchWorker{DB: tx, Params: scoring.DefaultParams(), Logger: slog.New(slog.DiscardHandler)}
	return &testBundle{tx: tx, worker: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)}
}

func (b *testBundle) work(t *testing.T, args queue.ScoreBatchArgs) (*rivertest.WorkResult, error) {
	t.Helper()
	return b.worker.Work(context.Background(), t, b.tx, args, nil)
}

var started = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

func args(id int64, peak bool, miners ...queue.MinerClassResult) queue.ScoreBatchArgs {
	return queue.ScoreBatchArgs{BatchID: id, StartedAt: started.Add(time.Duration(id) * time.Hour), Peak: peak, Miners: miners}
}

// rows dumps every score row of batch id, so two runs can be compared exactly.
func rows(t *testing.T, tx pgx.Tx, id int64) [][]any {
	t.Helper()
	var out [][]any
	for _, sql := range []string{
		`SELECT hotkey, executor_class, class_weight, raw, normalised FROM class_scores WHERE batch_id = $1 ORDER BY 1, 2`,
		`SELECT hotkey, base, dancing, non_peak, score, weight, weight_u16 FROM miner_scores WHERE batch_id = $1 ORDER BY 1`,
		`SELECT id, started_at, peak, scored_at FROM batches WHERE id = $1`,
	} {
		r, err := tx.Query(context.Background(), sql, id)
		require.NoError(t, err)
		got, err := pgx.CollectRows(r, func(row pgx.CollectableRow) ([]any, error) { return row.Values() })
		require.NoError(t, err)
		out = append(out, got...)
	}
	return out
}

func TestScoreBatchWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ScoringTwiceWritesTheSameRows", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		a := args(1, true,
			queue.MinerClassResult{Hotkey: "A", ExecutorClass: llm, Executors: 4, Completed: 3, Failed: 1},
			queue.MinerClassResult{Hotkey: "B", ExecutorClass: llm, Executors: 1, Completed: 1})
		res, err := bundle.work(t, a)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		first := rows(t, bundle.tx, 1)
		require.Len(t, first, 5)

		res, err = bundle.work(t, a)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, first, rows(t, bundle.tx, 1))

		scores, err := store.BatchScoresGet(ctx, bundle.tx, 1)
		require.NoError(t, err)
		require.Len(t, scores.Miners, 2)
		require.InDelta(t, 0.75, scores.Miners[0].Weight, 1e-12)
		require.Equal(t, 3, scores.Miners[0].Classes[0].Completed)
	})

	t.Run("SameBatchWithOtherInputsIsDiscarded", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		a := args(2, true, queue.MinerClassResult{Hotkey: "A", ExecutorClass: llm, Executors: 1, Completed: 1})
		_, err := bundle.work(t, a)
		require.NoError(t, err)
		before := rows(t, bundle.tx, 2)

		a.Miners[0].Completed, a.Miners[0].Failed = 0, 1
		res, err := bundle.work(t, a)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobFailed, res.EventKind)
		require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
		require.Contains(t, res.Job.Errors[0].Error, store.ErrInputsDiffer.Error())
		require.Equal(t, before, rows(t, bundle.tx, 2))
		var failed string
		require.NoError(t, bundle.tx.QueryRow(ctx, `SELECT error FROM scoring_failures WHERE river_job_id = $1`, res.Job.ID).Scan(&failed))
		require.Equal(t, res.Job.Errors[0].Error, failed)
	})

	t.Run("NoMinersIsRecordedAndScoresNobody", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		res, err := bundle.work(t, args(3, true))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		scores, err := store.BatchScoresGet(ctx, bundle.tx, 3)
		require.NoError(t, err)
		require.Empty(t, scores.Miners)
	})

	t.Run("UnknownClassScoresZero", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		_, err := bundle.work(t, args(4, true,
			queue.MinerClassResult{Hotkey: "A", ExecutorClass: "gpu-from-the-future", Executors: 2, Completed: 2},
			queue.MinerClassResult{Hotkey: "B", ExecutorClass: llm, Executors: 1, Completed: 1}))
		require.NoError(t, err)
		scores, err := store.BatchScoresGet(ctx, bundle.tx, 4)
		require.NoError(t, err)
		require.Equal(t, "A", scores.Miners[0].Hotkey)
		require.Zero(t, scores.Miners[0].Weight)
		require.InDelta(t, 2.0, scores.Miners[0].Classes[0].Raw, 1e-12)
		require.Equal(t, 65535, scores.Miners[1].WeightU16)
	})

	t.Run("InvalidArgsAreDiscardedAndRecordedAsFailed", func(t *testing.T) {
		t.Parallel()
		for name, a := range map[string]queue.ScoreBatchArgs{
			"NegativeCount": args(5, true, queue.MinerClassResult{Hotkey: "A", ExecutorClass: llm, Executors: -1}),
			"NoHotkey":      args(5, true, queue.MinerClassResult{ExecutorClass: llm, Executors: 1}),
			"ZeroBatchID":   {StartedAt: started},
			"NoStartedAt":   {BatchID: 5},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				bundle := setup(t)
				res, err := bundle.work(t, a) // failing it in its own transaction is not an error of Work's
				require.NoError(t, err)
				require.Equal(t, river.EventKindJobFailed, res.EventKind)
				require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
				require.Len(t, res.Job.Errors, 1)
				require.Empty(t, rows(t, bundle.tx, 5))
				_, err = store.BatchScoresGet(ctx, bundle.tx, a.BatchID)
				require.Equal(t, problem.Conflict, problem.CodeOf(err), "the API says the scoring failed: %v", err)
				require.ErrorContains(t, err, res.Job.Errors[0].Error)
			})
		}
	})

	t.Run("NonPeakBatchComparesWithTheLastPeak", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		// Peak batches 10 and 11 with the same executors (no dancing); batch 12 is not a peak
		// and A keeps 1 of its 20 executors (5 % < 10 %): ×0.8.
		peak := []queue.MinerClassResult{
			{Hotkey: "A", ExecutorClass: llm, Executors: 20, Completed: 20},
			{Hotkey: "B", ExecutorClass: llm, Executors: 1, Completed: 1},
		}
		for _, id := range []int64{10, 11} {
			_, err := bundle.work(t, args(id, true, peak...))
			require.NoError(t, err)
		}
		_, err := bundle.work(t, args(12, false,
			queue.MinerClassResult{Hotkey: "A", ExecutorClass: llm, Executors: 1, Completed: 1},
			queue.MinerClassResult{Hotkey: "B", ExecutorClass: llm, Executors: 1, Completed: 1}))
		require.NoError(t, err)

		scores, err := store.BatchScoresGet(ctx, bundle.tx, 12)
		require.NoError(t, err)
		require.InDelta(t, 0.8, scores.Miners[0].NonPeak, 1e-12)
		require.InDelta(t, 1.0, scores.Miners[0].Dancing, 1e-12)
		require.InDelta(t, 1.0, scores.Miners[1].NonPeak, 1e-12)
		// A: 0.5 · 0.8 = 0.4, B: 0.5 → 4/9 and 5/9.
		require.InDelta(t, 4.0/9, scores.Miners[0].Weight, 1e-12)

		latest, err := store.WeightsLatest(ctx, bundle.tx)
		require.NoError(t, err)
		require.Equal(t, int64(12), latest.BatchID)
		require.Equal(t, 65535, latest.TotalU16)
	})
	t.Run("RetryScoresAgainWithTheCurrentParameters", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		a := args(20, true,
			queue.MinerClassResult{Hotkey: "A", ExecutorClass: llm, Executors: 2, Completed: 1, Excused: 1},
			queue.MinerClassResult{Hotkey: "B", ExecutorClass: llm, Executors: 2, Completed: 2})
		res, err := bundle.work(t, a)
		require.NoError(t, err)
		first, err := store.BatchScoresGet(ctx, bundle.tx, 20)
		require.NoError(t, err)
		require.InDelta(t, 0.5, first.Miners[0].Weight, 1e-12, "an excused job scores as a completed one")

		// The operator lowers the score of excused jobs and presses Retry on the scoring.
		params := scoring.DefaultParams()
		params.ExcusedScore = 0
		logs := &queuetest.UIActionLog{}
		rescorer := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
			&ScoreBatchWorker{DB: bundle.tx, Params: params, Logger: logs.Logger()})
		again, err := rescorer.WorkJob(ctx, t, bundle.tx, retried(t, bundle.tx, res.Job.ID))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, again.EventKind)
		second, err := store.BatchScoresGet(ctx, bundle.tx, 20)
		require.NoError(t, err)
		require.InDelta(t, 1.0/3, second.Miners[0].Weight, 1e-12, "scored again with the current parameters")
		require.Equal(t, first.ScoredAt, second.ScoredAt, "first scored when it was")
		require.Equal(t, []queuetest.UIAction{{Kind: "score_batch", JobID: res.Job.ID, Action: "retry",
			Did: "scored batch 20 again with the current parameters"}}, logs.UIActions(t))
	})

	t.Run("RetryOfInputsThatCannotBeScoredFailsAgain", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		logs := &queuetest.UIActionLog{}
		w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
			&ScoreBatchWorker{DB: bundle.tx, Params: scoring.DefaultParams(), Logger: logs.Logger()})
		res, err := w.Work(ctx, t, bundle.tx, args(21, true, queue.MinerClassResult{ExecutorClass: llm, Executors: 1}), nil)
		require.NoError(t, err)
		require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
		require.Empty(t, logs.UIActions(t))

		again, err := w.WorkJob(ctx, t, bundle.tx, retried(t, bundle.tx, res.Job.ID))
		require.NoError(t, err)
		require.Equal(t, rivertype.JobStateDiscarded, again.Job.State)
		require.Len(t, again.Job.Errors, 2)
		actions := logs.UIActions(t)
		require.Len(t, actions, 1)
		require.Equal(t, "retry", actions[0].Action)
		require.Contains(t, actions[0].Did, "failed again: score_batch 21")
	})

	t.Run("HasItsOwnTimeout", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, ScoreTimeout, (&ScoreBatchWorker{}).Timeout(nil))
	})
}
