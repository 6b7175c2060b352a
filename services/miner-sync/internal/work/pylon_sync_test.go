package work

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/testdb"
)

// pylonStub answers Pylon's neurons endpoint with whatever answer holds: a body, or a status.
type pylonStub struct {
	body   atomic.Value // string
	status atomic.Int32
}

func (p *pylonStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s := p.status.Load(); s != 0 {
		w.WriteHeader(int(s))
		return
	}
	if r.URL.Path != "/api/v1/subnet/12/block/latest/neurons" {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write([]byte(p.body.Load().(string)))
}

// publish makes the stub answer these neurons at block number, hash.
func (p *pylonStub) publish(t *testing.T, number int64, hash string, neurons ...map[string]any) {
	t.Helper()
	byKey := map[string]any{}
	for _, n := range neurons {
		byKey[n["hotkey"].(string)] = n
	}
	body, err := json.Marshal(map[string]any{"block": map[string]any{"number": number, "hash": hash}, "neurons": byKey})
	require.NoError(t, err)
	p.body.Store(string(body))
}

func neuron(t *testing.T, uid int, key byte, ip string) map[string]any {
	t.Helper()
	return map[string]any{
		"uid": uid, "hotkey": address(t, key), "coldkey": address(t, 200), "active": true,
		"axon_info": map[string]any{"ip": ip, "port": 8000 + uid, "protocol": 4}, "stake": 3.5,
		"validator_permit": false, "last_update": 10,
	}
}

func TestSyncFromPylon(t *testing.T) {
	t.Parallel()
	tx := testdb.Tx(t, "miner_sync")
	stub := &pylonStub{}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	w := &SyncMetagraphWorker{DB: tx, Logger: slog.New(slog.DiscardHandler), Source: &metagraph.PylonSource{
		BaseURL: srv.URL, Netuid: 12, Timeout: time.Second, MaxBytes: 1 << 16, MaxEntries: 100,
	}}
	worker := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
	sync := func() store.SyncEvent {
		_, err := worker.Work(context.Background(), t, tx, queue.SyncMetagraphArgs{Reason: "periodic"}, nil)
		require.NoError(t, err)
		events, err := store.SyncEventList(context.Background(), tx, 0, 1)
		require.NoError(t, err)
		return events[0]
	}

	hash := "0x" + "00ff000000000000000000000000000000000000000000000000000000000001"
	bad := neuron(t, 2, 3, "10.0.0.3")
	delete(bad, "axon_info")
	stub.publish(t, 4242, hash, neuron(t, 0, 1, "10.0.0.1"), neuron(t, 1, 2, "2001:db8::2"), bad)
	ev := sync()
	require.Equal(t, store.OutcomePartial, ev.Outcome)
	require.Equal(t, int64(4242), *ev.Block)
	require.Equal(t, hash, *ev.BlockHash)
	require.Equal(t, 12, *ev.Netuid)
	require.Equal(t, 2, ev.Upserted)
	require.Contains(t, ev.SkippedEntries[0].Reason, "axon_info is missing")
	list, err := store.MinerList(context.Background(), tx, store.MinerFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "2001:db8::2", list[1].IP)

	stub.status.Store(http.StatusBadGateway) // Pylon is down: the list stays
	ev = sync()
	require.Equal(t, store.OutcomeFailed, ev.Outcome)
	require.Contains(t, *ev.Error, "status 502")
	require.Nil(t, ev.BlockHash)
	after, err := store.MinerList(context.Background(), tx, store.MinerFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, list, after)
}
