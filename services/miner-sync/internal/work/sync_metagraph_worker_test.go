package work

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/testdb"
)

type testBundle struct {
	tx     pgx.Tx
	path   string // the metagraph file the worker reads
	worker *rivertest.Worker[queue.SyncMetagraphArgs, pgx.Tx]
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	tx := testdb.Tx(t, "miner_sync")
	path := filepath.Join(t.TempDir(), "metagraph.json")
	w := &SyncMetagraphWorker{
		DB: tx, Logger: slog.New(slog.DiscardHandler),
		Source: &metagraph.FileSource{Path: path, MaxBytes: 1 << 16, MaxEntries: 100},
	}
	return &testBundle{tx: tx, path: path, worker: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)}
}

// publish writes the metagraph the next sync reads.
func (b *testBundle) publish(t *testing.T, miners ...map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"netuid": 12, "block": 100, "miners": miners})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b.path, body, 0o600))
}

// sync works one sync job and returns the event it recorded.
func (b *testBundle) sync(t *testing.T) store.SyncEvent {
	t.Helper()
	res, err := b.worker.Work(context.Background(), t, b.tx, queue.SyncMetagraphArgs{Reason: "periodic"}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	events, err := store.SyncEventList(context.Background(), b.tx, 0, 1)
	require.NoError(t, err)
	require.Len(t, events, 1)
	return events[0]
}

func (b *testBundle) miners(t *testing.T) map[string]store.Miner {
	t.Helper()
	list, err := store.MinerList(context.Background(), b.tx, store.MinerFilter{Limit: 1000})
	require.NoError(t, err)
	out := map[string]store.Miner{}
	for _, m := range list {
		out[m.Hotkey] = m
	}
	return out
}

func address(t *testing.T, b byte) string {
	t.Helper()
	var key hotkey.PublicKey
	key[0], key[31] = b, 0x5a
	addr, err := hotkey.EncodeSS58(key, hotkey.SubstrateFormat)
	require.NoError(t, err)
	return addr
}

func entry(t *testing.T, uid int, key byte, ip string) map[string]any {
	t.Helper()
	return map[string]any{"uid": uid, "hotkey": address(t, key), "coldkey": address(t, 200), "ip": ip, "port": 8000 + uid, "stake": 10.5, "validator": false}
}

func TestSyncMetagraphWorker(t *testing.T) {
	t.Parallel()

	t.Run("UpsertsAndDeactivatesKeepingHistory", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.publish(t, entry(t, 0, 1, "10.0.0.1"), entry(t, 1, 2, "10.0.0.2"))
		ev := bundle.sync(t)
		require.Equal(t, store.OutcomeOK, ev.Outcome)
		require.Equal(t, 2, ev.Upserted)

		// Miner 2 deregisters, miner 1 moves, miner 3 registers.
		bundle.publish(t, entry(t, 0, 1, "10.0.0.9"), entry(t, 2, 3, "10.0.0.3"))
		ev = bundle.sync(t)
		require.Equal(t, store.OutcomeOK, ev.Outcome)
		require.Equal(t, 2, ev.Upserted)
		require.Equal(t, 1, ev.Deactivated)

		miners := bundle.miners(t)
		require.Len(t, miners, 3, "a deregistered miner keeps its row")
		require.Equal(t, "10.0.0.9", miners[address(t, 1)].IP)
		require.True(t, miners[address(t, 1)].Active)
		require.False(t, miners[address(t, 2)].Active)
		require.True(t, miners[address(t, 3)].Active)

		// It comes back: active again, first_seen unchanged.
		first := miners[address(t, 2)].FirstSeen
		bundle.publish(t, entry(t, 0, 1, "10.0.0.9"), entry(t, 1, 2, "10.0.0.2"))
		bundle.sync(t)
		back := bundle.miners(t)[address(t, 2)]
		require.True(t, back.Active)
		require.Equal(t, first, back.FirstSeen)
	})

	t.Run("BadEntriesSkippedAndReported", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		badPort := entry(t, 1, 2, "10.0.0.2")
		badPort["port"] = 0
		badKey := entry(t, 2, 3, "10.0.0.3")
		badKey["hotkey"] = "5NotAnAddress"
		bundle.publish(t, entry(t, 0, 1, "10.0.0.1"), badPort, badKey, map[string]any{"uid": "x"}, entry(t, 4, 5, "host.example"))

		ev := bundle.sync(t)
		require.Equal(t, store.OutcomePartial, ev.Outcome)
		require.Equal(t, 5, ev.Entries)
		require.Equal(t, 1, ev.Upserted)
		require.Equal(t, 4, ev.Skipped)
		require.Len(t, ev.SkippedEntries, 4)
		require.Equal(t, 1, ev.SkippedEntries[0].Index)
		require.Contains(t, ev.SkippedEntries[0].Reason, "port 0")
		require.Contains(t, ev.SkippedEntries[1].Reason, "hotkey")
		require.Contains(t, ev.SkippedEntries[2].Reason, "undecodable")
		require.Contains(t, ev.SkippedEntries[3].Reason, "not an IP literal")
		require.Len(t, bundle.miners(t), 1)
	})

	t.Run("NonServingNeuronsKeptForTheirStake", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		validator := entry(t, 1, 2, "0.0.0.0")
		validator["port"], validator["stake"], validator["validator"] = 0, 50000.0, true
		noPermit := entry(t, 2, 3, "::")
		noPermit["port"] = 0
		bundle.publish(t, entry(t, 0, 1, "10.0.0.1"), validator, noPermit)

		ev := bundle.sync(t)
		require.Equal(t, store.OutcomeOK, ev.Outcome, "skipped: %v", ev.SkippedEntries)
		require.Equal(t, 3, ev.Upserted)
		miners := bundle.miners(t)
		require.True(t, miners[address(t, 1)].Serving)
		v := miners[address(t, 2)]
		require.False(t, v.Serving)
		require.True(t, v.IsValidator)
		require.True(t, v.Active)
		require.Equal(t, "0.0.0.0", v.IP)
		require.Zero(t, v.Port)
		require.InDelta(t, 50000.0, v.Stake, 0)
		require.False(t, miners[address(t, 3)].Serving)
		require.Equal(t, "::", miners[address(t, 3)].IP)

		// The validator opens an axon: it serves from the next sync on.
		validator["ip"], validator["port"] = "10.0.0.2", 8001
		bundle.publish(t, entry(t, 0, 1, "10.0.0.1"), validator, noPermit)
		bundle.sync(t)
		v = bundle.miners(t)[address(t, 2)]
		require.True(t, v.Serving)
		require.Equal(t, 8001, v.Port)
	})

	t.Run("PortZeroOnlyWhenNotServing", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		insert := func(serving bool) error {
			_, err := bundle.tx.Exec(context.Background(), `SAVEPOINT p`)
			require.NoError(t, err)
			_, err = bundle.tx.Exec(context.Background(), `
				INSERT INTO miners (hotkey, uid, coldkey, ip, port, serving) VALUES ($1, 1, $1, '0.0.0.0', 0, $2)`,
				address(t, 9), serving)
			_, rbErr := bundle.tx.Exec(context.Background(), `ROLLBACK TO SAVEPOINT p`)
			require.NoError(t, rbErr)
			return err
		}
		require.ErrorContains(t, insert(true), "miners_port_check")
		require.NoError(t, insert(false))
	})

	t.Run("OutageKeepsTheLastGoodList", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.publish(t, entry(t, 0, 1, "10.0.0.1"), entry(t, 1, 2, "10.0.0.2"))
		bundle.sync(t)
		before := bundle.miners(t)

		for name, breakIt := range map[string]func(){
			"Unreachable": func() { require.NoError(t, os.Remove(bundle.path)) },
			"Garbage":     func() { require.NoError(t, os.WriteFile(bundle.path, []byte("<html>"), 0o600)) },
			"NothingUsable": func() {
				bad := entry(t, 0, 1, "0.0.0.0")
				bundle.publish(t, bad)
			},
			"TooLarge": func() {
				require.NoError(t, os.WriteFile(bundle.path, make([]byte, 1<<17), 0o600))
			},
		} {
			breakIt()
			ev := bundle.sync(t)
			require.Equal(t, store.OutcomeFailed, ev.Outcome, name)
			require.NotNil(t, ev.Error, name)
			require.Zero(t, ev.Deactivated, name)
			require.Equal(t, before, bundle.miners(t), name)
		}
	})
}
