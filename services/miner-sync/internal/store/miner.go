package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// MinersApply makes the miners table match a good metagraph: every miner in it upserted and
// active, every active miner missing from it deactivated (its row, and so its history, kept). It
// returns how many rows were written and deactivated.
func MinersApply(ctx context.Context, tx pgx.Tx, miners []metagraph.Miner) (upserted, deactivated int, err error) {
	n := len(miners)
	arg := dbsqlc.MinerUpsertParams{
		Hotkeys: make([]string, n), Uids: make([]int32, n), Coldkeys: make([]string, n), Ips: make([]string, n),
		Ports: make([]int32, n), Stakes: make([]float64, n), Validators: make([]bool, n), Serving: make([]bool, n),
	}
	for i, m := range miners {
		arg.Uids[i], arg.Ports[i] = int32(m.UID), int32(m.Port)
		arg.Hotkeys[i], arg.Coldkeys[i], arg.Ips[i] = m.Hotkey, m.Coldkey, m.IP
		arg.Stakes[i], arg.Validators[i], arg.Serving[i] = m.Stake, m.Validator, m.Serving
	}
	written, err := queries.MinerUpsert(ctx, tx, arg)
	if err != nil {
		return 0, 0, fmt.Errorf("upsert %d miners: %w", n, err)
	}
	gone, err := queries.MinerDeactivateMissing(ctx, tx, arg.Hotkeys)
	if err != nil {
		return int(written), 0, fmt.Errorf("deactivate miners gone from the metagraph: %w", err)
	}
	return int(written), int(gone), nil
}

// Miner is a row of the miners table.
type Miner struct {
	Hotkey      string  `json:"hotkey"`
	UID         int     `json:"uid"`
	Coldkey     string  `json:"coldkey"`
	IP          string  `json:"ip"`
	Port        int     `json:"port"`
	Stake       float64 `json:"stake"`
	IsValidator bool    `json:"is_validator"`
	// Serving is false for a neuron with no axon (ip 0.0.0.0 or ::, port 0): batches skip it.
	Serving   bool      `json:"serving"`
	Active    bool      `json:"active"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MinerFilter selects a page of miners, ordered by (uid, hotkey). Nil filters match everything.
type MinerFilter struct {
	Active    *bool
	Validator *bool
	Serving   *bool
	Hotkey    string

	// After is the cursor: the (uid, hotkey) of the last miner of the previous page.
	AfterUID    int
	AfterHotkey string
	HasAfter    bool

	Limit int
}

// MinerList returns the miners f selects.
func MinerList(ctx context.Context, db postgres.DBTX, f MinerFilter) ([]Miner, error) {
	rows, err := queries.MinerListPage(ctx, db, dbsqlc.MinerListPageParams{
		Active: f.Active, IsValidator: f.Validator, Serving: f.Serving, Hotkey: f.Hotkey,
		HasAfter: f.HasAfter, AfterUid: int32(f.AfterUID), AfterHotkey: f.AfterHotkey, Max: int32(f.Limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list miners: %w", err)
	}
	miners := make([]Miner, len(rows))
	for i, r := range rows {
		miners[i] = Miner{
			Hotkey: r.Hotkey, UID: int(r.Uid), Coldkey: r.Coldkey, IP: r.Ip, Port: int(r.Port), Stake: r.Stake,
			IsValidator: r.IsValidator, Serving: r.Serving, Active: r.Active,
			FirstSeen: r.FirstSeen, LastSeen: r.LastSeen, UpdatedAt: r.UpdatedAt,
		}
	}
	return miners, nil
}
