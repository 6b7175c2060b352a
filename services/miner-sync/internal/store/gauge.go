package store

import (
	"context"
	"fmt"

	"drover.dev/services/miner-sync/internal/store/dbsqlc"
	"drover.dev/shared/metrics"
	"drover.dev/shared/postgres"
)

// MinerState is the state a miner is counted in by the miners gauge.
type MinerState string

// The miner states, each miner in exactly one, tested in this order.
const (
	MinerInactive   MinerState = "inactive"    // deregistered (not active)
	MinerValidator  MinerState = "validator"   // a validator of the subnet
	MinerServing    MinerState = "serving"     // has an axon
	MinerNotServing MinerState = "not_serving" // has no axon
)

// MinerStates returns every miner state, in the order the gauge reports them.
func MinerStates() []MinerState {
	return []MinerState{MinerServing, MinerNotServing, MinerValidator, MinerInactive}
}

// MinerStateCounts returns how many miners are in each state, every state present.
func MinerStateCounts(ctx context.Context, db postgres.DBTX) (map[MinerState]float64, error) {
	rows, err := queries.MinerStateCountList(ctx, db, dbsqlc.MinerStateCountListParams{
		States: metrics.Strings(MinerStates()), Inactive: string(MinerInactive), Validator: string(MinerValidator),
		Serving: string(MinerServing), NotServing: string(MinerNotServing),
	})
	if err != nil {
		return nil, fmt.Errorf("count miners by state: %w", err)
	}
	out := make(map[MinerState]float64, len(rows))
	for _, r := range rows {
		out[MinerState(r.State)] = r.Miners
	}
	return out, nil
}

// LastGoodSyncAge returns the seconds since the last sync that applied a metagraph (ok or
// partial); pgx.ErrNoRows (wrapped) before the first.
func LastGoodSyncAge(ctx context.Context, db postgres.DBTX) (float64, error) {
	age, err := queries.SyncEventGoodAgeGet(ctx, db, string(OutcomeFailed))
	if err != nil {
		return 0, fmt.Errorf("get last good sync age: %w", err)
	}
	return age, nil
}

// LastSyncBlock returns the block of the metagraph the last sync that reached the source read;
// pgx.ErrNoRows (wrapped) before the first.
func LastSyncBlock(ctx context.Context, db postgres.DBTX) (float64, error) {
	block, err := queries.SyncEventBlockGet(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("get last sync block: %w", err)
	}
	return block, nil
}
