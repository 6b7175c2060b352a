package examples

import (
	"context"
	"fmt"
	"math/rand/v2"

	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// MaxSeed bounds one seed call.
const MaxSeed = 10_000

// SeedResult lists the signals a seed call inserted; EmptyIDs have no samples and fail every
// make downstream of them.
type SeedResult struct {
	SignalIDs []int64 `json:"signal_ids"`
	EmptyIDs  []int64 `json:"empty_ids"`
}

// Seed inserts n signals of random samples into the manual table example_signal, the first empty
// of them with no samples. It is how the demo adds upstream rows without touching the database.
func Seed(ctx context.Context, db postgres.DBTX, n, empty int) (SeedResult, error) {
	if n < 1 || n > MaxSeed {
		return SeedResult{}, problem.Unprocessablef("signals", "must be 1 to %d", MaxSeed)
	}
	if empty < 0 || empty > n {
		return SeedResult{}, problem.Unprocessablef("empty", "must be 0 to signals")
	}
	batches := make([][]float64, n)
	for i := empty; i < n; i++ {
		batches[i] = make([]float64, 8+rand.IntN(24))
		for j := range batches[i] {
			batches[i][j] = rand.Float64()
		}
	}
	res := SeedResult{SignalIDs: []int64{}, EmptyIDs: []int64{}}
	for i, samples := range batches {
		if samples == nil {
			samples = []float64{}
		}
		var id int64
		if err := db.QueryRow(ctx, `INSERT INTO example_signal (samples) VALUES ($1) RETURNING signal_id`, samples).Scan(&id); err != nil {
			return res, fmt.Errorf("insert example signal: %w", err)
		}
		res.SignalIDs = append(res.SignalIDs, id)
		if i < empty {
			res.EmptyIDs = append(res.EmptyIDs, id)
		}
	}
	return res, nil
}
