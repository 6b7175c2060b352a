package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/shared/postgres"
)

// MinersApply makes the miners table match a good metagraph: every miner in it upserted and
// active, every active miner missing from it deactivated (its row, and so its history, kept). It
// returns how many rows were written and deactivated.
func MinersApply(ctx context.Context, tx pgx.Tx, miners []metagraph.Miner) (upserted, deactivated int, err error) {
	n := len(miners)
	uids, ports := make([]int32, n), make([]int32, n)
	hotkeys, coldkeys, ips := make([]string, n), make([]string, n), make([]string, n)
	stakes, validators, serving := make([]float64, n), make([]bool, n), make([]bool, n)
	for i, m := range miners {
		uids[i], ports[i] = int32(m.UID), int32(m.Port)
		hotkeys[i], coldkeys[i], ips[i] = m.Hotkey, m.Coldkey, m.IP
		stakes[i], validators[i], serving[i] = m.Stake, m.Validator, m.Serving
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO miners AS m (hotkey, uid, coldkey, ip, port, stake, is_validator, serving)
		SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::int[], $6::float8[], $7::bool[], $8::bool[])
		ON CONFLICT (hotkey) DO UPDATE SET
			uid = excluded.uid, coldkey = excluded.coldkey, ip = excluded.ip, port = excluded.port,
			stake = excluded.stake, is_validator = excluded.is_validator, serving = excluded.serving,
			active = true, last_seen = now(),
			updated_at = CASE WHEN (m.uid, m.coldkey, m.ip, m.port, m.stake, m.is_validator, m.serving, m.active)
				IS DISTINCT FROM (excluded.uid, excluded.coldkey, excluded.ip, excluded.port, excluded.stake, excluded.is_validator, excluded.serving, true)
				THEN now() ELSE m.updated_at END`,
		hotkeys, uids, coldkeys, ips, ports, stakes, validators, serving)
	if err != nil {
		return 0, 0, fmt.Errorf("upsert %d miners: %w", n, err)
	}
	upserted = int(tag.RowsAffected())
	tag, err = tx.Exec(ctx, `
		UPDATE miners SET active = false, updated_at = now()
		WHERE active AND hotkey <> ALL($1::text[])`, hotkeys)
	if err != nil {
		return upserted, 0, fmt.Errorf("deactivate miners gone from the metagraph: %w", err)
	}
	return upserted, int(tag.RowsAffected()), nil
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
	rows, err := db.Query(ctx, `
		SELECT hotkey, uid, coldkey, ip, port, stake, is_validator, serving, active, first_seen, last_seen, updated_at
		FROM miners
		WHERE ($1::bool IS NULL OR active = $1)
		  AND ($2::bool IS NULL OR is_validator = $2)
		  AND ($3 = '' OR hotkey = $3)
		  AND (NOT $4 OR (uid, hotkey) > ($5, $6 COLLATE "C"))
		  AND ($8::bool IS NULL OR serving = $8)
		ORDER BY uid, hotkey COLLATE "C"
		LIMIT $7`,
		f.Active, f.Validator, f.Hotkey, f.HasAfter, f.AfterUID, f.AfterHotkey, f.Limit, f.Serving)
	if err != nil {
		return nil, fmt.Errorf("list miners: %w", err)
	}
	miners, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Miner])
	if err != nil {
		return nil, fmt.Errorf("read miners: %w", err)
	}
	return miners, nil
}
