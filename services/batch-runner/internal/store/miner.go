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
	rows, err := queries.MinerList(ctx, db)
	if err != nil {
		return nil, nil, fmt.Errorf("list miners: %w", err)
	}
	var miners []batch.Miner
	validators := make(map[string]receipts.Validator, len(rows))
	for _, r := range rows {
		validators[r.Hotkey] = receipts.Validator{Stake: r.Stake, Active: r.Active && r.IsValidator}
		if r.Active && r.Serving && !r.IsValidator {
			miners = append(miners, batch.Miner{Hotkey: r.Hotkey, IP: r.Ip, Port: int(r.Port)})
		}
	}
	return miners, validators, nil
}

// PreviousJobCounts returns the job count per miner and class of the last finished batch, the
// basis of the next batch's pregeneration.
func PreviousJobCounts(ctx context.Context, db postgres.DBTX) (map[batch.Pair]int, int, error) {
	rows, err := queries.BatchJobCountPrevious(ctx, db)
	if err != nil {
		return nil, 0, fmt.Errorf("previous batch job counts: %w", err)
	}
	out := make(map[batch.Pair]int, len(rows))
	total := 0
	for _, r := range rows {
		out[batch.Pair{Miner: r.MinerHotkey, Class: r.ExecutorClass}] = int(r.Jobs)
		total += int(r.Jobs)
	}
	return out, total, nil
}
