package store

import (
	"context"
	"fmt"

	"drover.dev/computehorde/receipts"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/shared/postgres"
)

// MinerList reads miner_sync.miners (read-only, the documented cross-read). It returns the
// miners a batch tests, active and serving and not validators, and every neuron the metagraph
// lists, with its stake, for judging the signers of busy-excuse receipts. Validators serve no
// axon (miner-sync keeps them with serving = false), so they must come from the whole table, not
// from the miners tested; a neuron counts as an active validator only while registered with a
// validator permit.
func MinerList(ctx context.Context, db postgres.DBTX) ([]batch.Miner, map[string]receipts.Validator, error) {
	rows, err := db.Query(ctx, `
		SELECT hotkey, ip, port, stake, is_validator, active, serving
		FROM miner_sync.miners
		ORDER BY uid, hotkey`)
	if err != nil {
		return nil, nil, fmt.Errorf("list miners: %w", err)
	}
	defer rows.Close()
	var miners []batch.Miner
	validators := map[string]receipts.Validator{}
	for rows.Next() {
		var (
			m                          batch.Miner
			stake                      float64
			validator, active, serving bool
		)
		if err := rows.Scan(&m.Hotkey, &m.IP, &m.Port, &stake, &validator, &active, &serving); err != nil {
			return nil, nil, fmt.Errorf("scan miner: %w", err)
		}
		validators[m.Hotkey] = receipts.Validator{Stake: stake, Active: active && validator}
		if active && serving && !validator {
			miners = append(miners, m)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("list miners: %w", err)
	}
	return miners, validators, nil
}

// PreviousJobCounts returns the job count per miner and class of the last finished batch, the
// basis of the next batch's pregeneration.
func PreviousJobCounts(ctx context.Context, db postgres.DBTX) (map[batch.Pair]int, int, error) {
	rows, err := db.Query(ctx, `
		SELECT miner_hotkey, executor_class, count(*)
		FROM batch_jobs
		WHERE batch_id = (SELECT max(id) FROM batches WHERE state = 'done')
		GROUP BY 1, 2`)
	if err != nil {
		return nil, 0, fmt.Errorf("previous batch job counts: %w", err)
	}
	defer rows.Close()
	out := map[batch.Pair]int{}
	total := 0
	for rows.Next() {
		var (
			p batch.Pair
			n int
		)
		if err := rows.Scan(&p.Miner, &p.Class, &n); err != nil {
			return nil, 0, fmt.Errorf("scan job count: %w", err)
		}
		out[p] = n
		total += n
	}
	return out, total, rows.Err()
}
