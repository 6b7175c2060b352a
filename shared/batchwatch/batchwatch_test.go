package batchwatch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stored decodes the part of GET /v1/batches/{id} that Finish reads.
func stored(t *testing.T, raw string) (stages []Stage, spreadUS *int64) {
	t.Helper()
	var b struct {
		Stages       []Stage `json:"stages"`
		SendSpreadUS *int64  `json:"send_spread_us"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &b))
	return b.Stages, b.SendSpreadUS
}

// TestWatcherReleaseUnseen: a hot phase that started and ended between two polls still shows its
// release before its end.
func TestWatcherReleaseUnseen(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	w := New(&out)
	w.Finish(stored(t, `{"send_spread_us": 250, "stages": [
		{"name": "hot", "started_at": "2026-11-22T10:00:00Z", "finished_at": "2026-11-22T10:00:00.080Z",
		 "counts": {"jobs": 8, "sent": 7, "send_failed": 1, "finished": 7, "failed": 0}}]}`))
	require.Equal(t, `  hot phase     sent 7 of 8 jobs in one release, spread 0.2 ms
  hot phase     7 finished, 0 failed, 0 no answer in 80 ms
`, out.String())
}

// TestWatcherAnnouncesOnce: the batch is announced once, when its miners are known, whether the
// live record or the batch's row says so first.
func TestWatcherAnnouncesOnce(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	w := New(&out)
	w.Announce(4, 0) // the row before phase 1 has read the miners
	w.Update(Progress{BatchID: 4}, time.Time{})
	w.Announce(4, 12)
	w.Update(Progress{BatchID: 4, Miners: 12}, time.Time{})
	require.Equal(t, "batch 4 running: 12 miners to test\n", out.String())
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		1200 * time.Microsecond: "1.2 ms",
		212 * time.Millisecond:  "212 ms",
		5004 * time.Millisecond: "5.00 s",
	} {
		require.Equal(t, want, FormatDuration(d), d.String())
	}
}
