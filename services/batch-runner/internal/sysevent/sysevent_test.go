package sysevent

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecorder(t *testing.T) {
	t.Parallel()

	type testBundle struct{ rec *Recorder }
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{rec: New(nil)}
	}

	t.Run("LimitedKindKeepsTenOfTwenty", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for i := range 20 {
			bundle.rec.Add(TypeJobFailure, JobExecutionTimeout, "timed out", map[string]int{"i": i})
		}
		events := bundle.rec.Drain()
		require.Len(t, events, 11)
		for _, e := range events[:10] {
			require.Equal(t, JobExecutionTimeout, e.Subtype)
		}
		require.Equal(t, Dropped, events[10].Subtype)
		var data map[string]any
		require.NoError(t, json.Unmarshal(events[10].Data, &data))
		require.InDelta(t, 20, data["recorded"], 0)
		require.InDelta(t, 10, data["kept"], 0)
	})

	t.Run("UnlimitedKindKeepsAll", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for range 20 {
			bundle.rec.Addf(TypeJobFailure, ManifestTimeout, "miner %d", 1)
		}
		require.Len(t, bundle.rec.Drain(), 20)
	})

	t.Run("DrainEmpties", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.rec.Addf(TypeTelemetry, SyntheticBatch, "x")
		require.Len(t, bundle.rec.Drain(), 1)
		require.Empty(t, bundle.rec.Drain())
	})

	t.Run("ConcurrentAdds", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 100 {
					bundle.rec.Addf(TypeTelemetry, SyntheticBatch, "x")
				}
			})
		}
		wg.Wait()
		require.Equal(t, 800, bundle.rec.Len())
	})
}
