package queue

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue/queuetest"
)

// TestUniqueContractsInsertOnceWhileUnfinished checks the uniqueness each contract pins in its
// own InsertOpts, so that every inserter gets it: while a job is unfinished a second request
// returns it instead of queueing another, and once it has finished a new one is queued.
func TestUniqueContractsInsertOnceWhileUnfinished(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		first, again, other river.JobArgs // other is not a duplicate of first, even while it waits
	}{
		"RunBatch": {
			first: RunBatchArgs{Reason: "periodic", RequestedAt: goldenTime},
			again: RunBatchArgs{Reason: "api", RequestedAt: goldenTime.Add(time.Hour)},
			other: RunBatchArgs{Reason: "takeover", RequestedAt: goldenTime, TakeOver: &BatchTakeOver{BatchID: 1, Attempt: 1}},
		},
		"SyncMetagraph": {first: SyncMetagraphArgs{Reason: "periodic"}, again: SyncMetagraphArgs{Reason: "api"}},
		"SetWeights":    {first: SetWeightsArgs{Reason: "periodic"}, again: SetWeightsArgs{Reason: "scored"}},
		"PopulateSchedule": {
			first: PopulateScheduleArgs{Table: "signal_stats"},
			again: PopulateScheduleArgs{Table: "signal_stats"},
			other: PopulateScheduleArgs{Table: "signal_stats", Force: true},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := riverTx(t)
			client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
			require.NoError(t, err)

			first, err := client.InsertTx(ctx, tx, tt.first, nil)
			require.NoError(t, err)
			require.False(t, first.UniqueSkippedAsDuplicate)
			again, err := client.InsertTx(ctx, tx, tt.again, nil)
			require.NoError(t, err)
			require.True(t, again.UniqueSkippedAsDuplicate, "a request while one is unfinished gets that one")
			require.Equal(t, first.Job.ID, again.Job.ID)
			if tt.other != nil {
				other, err := client.InsertTx(ctx, tx, tt.other, nil)
				require.NoError(t, err)
				require.False(t, other.UniqueSkippedAsDuplicate)
			}

			queuetest.Finish(ctx, t, tx, "", first.Job.ID, rivertype.JobStateCompleted)
			next, err := client.InsertTx(ctx, tx, tt.again, nil)
			require.NoError(t, err)
			require.False(t, next.UniqueSkippedAsDuplicate, "a finished job does not hold back the next")
		})
	}
}
