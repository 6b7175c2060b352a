package examples

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
	"drover.dev/shared/testdb"
)

func TestComputeStats(t *testing.T) {
	t.Parallel()

	t.Run("Stats", func(t *testing.T) {
		t.Parallel()
		rows, err := computeStats(context.Background(), populate.Key{"signal_id": 1}, []float64{0.2, 0.8, 0.5})
		require.NoError(t, err)
		require.Equal(t, 3, rows[0]["n"])
		require.InDelta(t, 0.5, rows[0]["mean"], 1e-9)
		require.InDelta(t, 0.8, rows[0]["peak"], 1e-9)
	})
	t.Run("EmptySignalIsAValueError", func(t *testing.T) {
		t.Parallel()
		_, err := computeStats(context.Background(), populate.Key{"signal_id": 7}, []float64{})
		require.EqualError(t, err, "ValueError: signal 7 has no samples")
	})
}

func TestSeed(t *testing.T) {
	t.Parallel()

	t.Run("InsertsSignals", func(t *testing.T) {
		t.Parallel()
		tx := testdb.Tx(t, "populate_worker")
		res, err := Seed(context.Background(), tx, 5, 2)
		require.NoError(t, err)
		require.Len(t, res.SignalIDs, 5)
		require.Equal(t, res.SignalIDs[:2], res.EmptyIDs)
		var empty int
		require.NoError(t, tx.QueryRow(context.Background(),
			`SELECT count(*) FROM example_signal WHERE cardinality(samples) = 0 AND signal_id = ANY($1)`, res.SignalIDs).Scan(&empty))
		require.Equal(t, 2, empty)
	})
	t.Run("BoundsAreChecked", func(t *testing.T) {
		t.Parallel()
		tx := testdb.Tx(t, "populate_worker")
		for _, tc := range [][2]int{{0, 0}, {MaxSeed + 1, 0}, {3, 4}, {3, -1}} {
			_, err := Seed(context.Background(), tx, tc[0], tc[1])
			require.Equal(t, problem.Unprocessable, problem.CodeOf(err), "%v", tc)
		}
	})
}
