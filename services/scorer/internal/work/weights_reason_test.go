package work

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/problem"
)

// TestWeightsLatestSaysWhyThereAreNone checks the 404 of GET /v1/weights when no scored batch
// gives a weight: it names what the latest scored batch lacked, above all a class weighing 0
// (always_on.test by default, the class a simulated fleet offers) and the setting that weighs it.
func TestWeightsLatestSaysWhyThereAreNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		miners []queue.MinerClassResult // nil: no batch is scored
		want   string
	}{
		{"NoBatchScored", nil, "no scored batch gives any weight yet: no batch with miners is scored yet"},
		{
			"OnlyZeroWeightClasses",
			[]queue.MinerClassResult{{Hotkey: "A", ExecutorClass: "always_on.test", Executors: 5, Completed: 5}},
			"no scored batch gives any weight yet: batch 1, the latest scored, tested executor classes that weigh 0 " +
				"(always_on.test), which SCORER_CLASS_WEIGHTS (class=weight,...) can weigh",
		},
		{
			"WeightedClassScoredNothing",
			[]queue.MinerClassResult{
				{Hotkey: "A", ExecutorClass: "always_on.test", Executors: 1, Completed: 1},
				{Hotkey: "B", ExecutorClass: llm, Executors: 2, Failed: 2},
			},
			"no scored batch gives any weight yet: batch 1, the latest scored, tested executor classes that weigh 0 " +
				"(always_on.test), which SCORER_CLASS_WEIGHTS (class=weight,...) can weigh; no executor of " + llm + " scored",
		},
		{
			"EveryJobFailed",
			[]queue.MinerClassResult{{Hotkey: "B", ExecutorClass: llm, Executors: 2, Failed: 2}},
			"no scored batch gives any weight yet: batch 1, the latest scored; no executor of " + llm + " scored",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bundle := setup(t)
			if tc.miners != nil {
				_, err := bundle.work(t, args(1, true, tc.miners...))
				require.NoError(t, err)
			}
			_, err := store.WeightsLatest(ctx, bundle.tx)
			require.ErrorIs(t, err, problem.ErrNotFound, "the API answers 404 and set_weights waits")
			var pe *problem.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, problem.NotFound, pe.Code)
			require.Equal(t, tc.want, pe.Detail)
		})
	}
}
