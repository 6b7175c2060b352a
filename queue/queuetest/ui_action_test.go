package queuetest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
)

// TestUIActionLog reads back what queue.LogUIAction writes, from workers logging at once, so that
// the message and field names spelled in queuetest stay those of the queue module's line.
func TestUIActionLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ReadsTheLinesLogUIActionWrites", func(t *testing.T) {
		t.Parallel()
		logs := &queuetest.UIActionLog{}
		logger := logs.Logger()
		logger.Info("build ran", "name", "docs")
		queue.LogUIAction(ctx, logger, &rivertype.JobRow{ID: 7, Kind: "probe"}, queue.UIActionRetry, "nothing run", "batch_id", 3)
		queue.LogUIAction(ctx, logger, &rivertype.JobRow{ID: 8, Kind: "probe_ack"}, queue.UIActionCancel, "stopped")

		require.Equal(t, []queuetest.UIAction{
			{Kind: "probe", JobID: 7, Action: "retry", Did: "nothing run"},
			{Kind: "probe_ack", JobID: 8, Action: "cancel", Did: "stopped"},
		}, logs.UIActions(t))
		require.Equal(t, []queuetest.UIAction{{Kind: "probe_ack", JobID: 8, Action: "cancel", Did: "stopped"}},
			logs.UIActions(t, "probe_ack"))
		require.Empty(t, logs.UIActions(t, "sync_metagraph"))
		lines := logs.Lines(t)
		require.Len(t, lines, 3)
		require.Equal(t, "docs", lines[0]["name"])
		require.InDelta(t, 3, lines[1]["batch_id"], 0, "the caller's attrs follow")
		require.Equal(t, 3, strings.Count(logs.String(), "\n"))
	})

	t.Run("TakesLinesFromManyGoroutines", func(t *testing.T) {
		t.Parallel()
		logs := &queuetest.UIActionLog{}
		logger := logs.Logger()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				queue.LogUIAction(ctx, logger, &rivertype.JobRow{ID: int64(i), Kind: "score_batch"}, queue.UIActionRetry, "scored")
				_ = logs.UIActions(t)
			})
		}
		wg.Wait()
		require.Len(t, logs.UIActions(t), 20)
	})

	t.Run("WaitsForALateLine", func(t *testing.T) {
		t.Parallel()
		logs := &queuetest.UIActionLog{}
		logger := logs.Logger()
		queue.LogUIAction(ctx, logger, &rivertype.JobRow{ID: 1, Kind: "populate_make"}, queue.UIActionCancel, "cancelled")
		go func() {
			time.Sleep(50 * time.Millisecond)
			queue.LogUIAction(ctx, logger, &rivertype.JobRow{ID: 1, Kind: "populate_make"}, queue.UIActionRetry, "made")
		}()
		actions := logs.WaitUIActions(t, 2)
		require.Equal(t, []string{"cancel", "retry"}, []string{actions[0].Action, actions[1].Action})
	})
}
