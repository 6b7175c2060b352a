package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/computehorde/synthetic"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/postgres"
	"drover.dev/shared/testdb"
)

// insertMetagraph writes g into miner_sync.miners as miner-sync stores it: neurons with no axon
// (ip 0.0.0.0, port 0) kept with serving = false.
func insertMetagraph(t *testing.T, db postgres.DBTX, g minersim.Metagraph) {
	t.Helper()
	for _, n := range g.Miners {
		_, err := db.Exec(context.Background(), `
			INSERT INTO miner_sync.miners (hotkey, uid, coldkey, ip, port, stake, is_validator, serving)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			n.Hotkey, n.UID, n.Coldkey, n.IP, n.Port, n.Stake, n.Validator, n.Port != 0)
		require.NoError(t, err)
	}
}

func TestMinerList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t, "batch_runner")
	rows := []struct {
		hotkey, ip                 string
		port                       int
		stake                      float64
		validator, active, serving bool
	}{
		{"serving", "10.0.0.1", 8000, 0, false, true, true},
		{"gone", "10.0.0.2", 8000, 0, false, false, true},
		{"no-axon", "0.0.0.0", 0, 0, false, true, false},
		{"validator", "0.0.0.0", 0, 50000, true, true, false},
		{"validator-with-axon", "10.0.0.3", 8000, 40000, true, true, true},
		{"validator-gone", "0.0.0.0", 0, 90000, true, false, false},
	}
	for i, r := range rows {
		_, err := tx.Exec(ctx, `
			INSERT INTO miner_sync.miners (hotkey, uid, coldkey, ip, port, stake, is_validator, active, serving)
			VALUES ($1, $2, $1, $3, $4, $5, $6, $7, $8)`, r.hotkey, i, r.ip, r.port, r.stake, r.validator, r.active, r.serving)
		require.NoError(t, err)
	}

	miners, validators, err := MinerList(ctx, tx)
	require.NoError(t, err)
	require.Equal(t, []batch.Miner{{Hotkey: "serving", IP: "10.0.0.1", Port: 8000}}, miners,
		"only active, serving, non-validator miners are tested")
	require.Equal(t, receipts.Validator{Stake: 50000, Active: true}, validators["validator"], "a validator with no axon is known")
	require.Equal(t, receipts.Validator{Stake: 40000, Active: true}, validators["validator-with-axon"])
	require.Equal(t, receipts.Validator{Stake: 90000, Active: false}, validators["validator-gone"])
	require.Equal(t, receipts.Validator{Stake: 0, Active: false}, validators["no-axon"], "no validator permit")
	require.Len(t, validators, len(rows))
}

// TestMinerListExcusesBusyMiners runs a batch on what MinerList read from a metagraph stored as
// miner-sync stores it: the validators that signed the busy miners' receipts are found there
// with their stake, so a valid receipt excuses and the others do not.
func TestMinerListExcusesBusyMiners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet, err := minersim.Start(ctx, minersim.Config{
		Miners: 4, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond,
		Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{
			0: {Decline: minersim.DeclineBusyValid},
			1: {Decline: minersim.DeclineBusyLowStake},
			2: {Decline: minersim.DeclineBusyInactive},
		}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fleet.Close() })
	tx := testdb.Tx(t, "batch_runner")
	insertMetagraph(t, tx, fleet.Metagraph())

	miners, validators, err := MinerList(ctx, tx)
	require.NoError(t, err)
	require.Len(t, miners, 4, "the fleet's validators are not tested")
	key, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	cfg := batch.Config{
		Key: key, Generators: batch.Generators{"*": synthetic.PoWGenerator{Range: 1 << 10, Limit: time.Second}},
		// Busy declines carry receipts the fleet signs on the spot: room for a loaded -race run.
		SpinUps: map[string]time.Duration{"*": 1500 * time.Millisecond}, MinSpinUp: 50 * time.Millisecond,
		ManifestTimeout: 2 * time.Second, ReadyGrace: 400 * time.Millisecond, JobExtra: 300 * time.Millisecond,
		ReceiptTimeout: time.Second, WriteTimeout: time.Second, ExcuseMinStake: receipts.DefaultMinExcuseStake,
	}
	res, err := batch.Run(ctx, cfg, batch.Plan{BatchID: 1, Miners: miners, Validators: validators, Events: sysevent.New(nil)})
	require.NoError(t, err)
	byMiner := map[string]batch.Reason{}
	for _, j := range res.Jobs {
		byMiner[j.Miner] = j.Reason
	}
	m := fleet.Miners()
	require.Equal(t, map[string]batch.Reason{
		m[0].Hotkey: batch.ReasonBusyExcused, m[1].Hotkey: batch.ReasonBusyUnexcused,
		m[2].Hotkey: batch.ReasonBusyUnexcused, m[3].Hotkey: batch.ReasonSuccess,
	}, byMiner)
}
