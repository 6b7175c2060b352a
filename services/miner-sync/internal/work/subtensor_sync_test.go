package work

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/subtensor/subtensortest"
	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/testdb"
)

// TestSyncFromSubtensorNode syncs a subnet of 1,024 neurons from a fake node replaying the
// recorded answers, then keeps the list when the node stops answering.
func TestSyncFromSubtensorNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t, "miner_sync")
	node := subtensortest.NewNode(t)
	neurons := make([]subtensortest.Neuron, 1024)
	for i := range neurons {
		neurons[i] = subtensortest.Neuron{
			Hot: subtensortest.Key(i, 7), Cold: subtensortest.Key(i, 8), UID: uint16(i), Netuid: 12,
			IP: netip.MustParseAddr(fmt.Sprintf("10.1.%d.%d", i/256, i%256)), Port: 9000, Stakes: []uint64{2_500_000_000},
		}
	}
	hash := "0x" + "ab00000000000000000000000000000000000000000000000000000000000001"
	node.RecordChain(5_000_001, hash, 12, subtensortest.EncodeNeurons(neurons))
	w := &SyncMetagraphWorker{DB: tx, Logger: slog.New(slog.DiscardHandler), Source: &metagraph.SubtensorSource{
		URL: node.URL(), Netuid: 12, Timeout: 2 * time.Second, MaxBytes: 1 << 20, MaxEntries: 4096,
	}}
	worker := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
	sync := func() store.SyncEvent {
		_, err := worker.Work(ctx, t, tx, queue.SyncMetagraphArgs{Reason: "periodic"}, nil)
		require.NoError(t, err)
		events, err := store.SyncEventList(ctx, tx, 0, 1)
		require.NoError(t, err)
		return events[0]
	}

	ev := sync()
	require.Equal(t, store.OutcomeOK, ev.Outcome, "error: %v", ev.Error)
	require.Equal(t, 1024, ev.Upserted)
	require.Equal(t, int64(5_000_001), *ev.Block)
	require.Equal(t, hash, *ev.BlockHash)
	list, err := store.MinerList(ctx, tx, store.MinerFilter{Limit: 2000})
	require.NoError(t, err)
	require.Len(t, list, 1024)
	require.InDelta(t, 2.5, list[0].Stake, 0)

	node.RecordChain(5_000_002, hash, 99, nil) // the node now has another head and no neurons for us
	node.Record("chain_getFinalizedHead", []any{}, "0xnothex")
	ev = sync()
	require.Equal(t, store.OutcomeFailed, ev.Outcome)
	require.Contains(t, *ev.Error, "is not a block hash")
	after, err := store.MinerList(ctx, tx, store.MinerFilter{Limit: 2000})
	require.NoError(t, err)
	require.Equal(t, list, after, "an outage keeps the last good list")
}
