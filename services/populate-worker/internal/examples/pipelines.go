// Package examples holds the populate-worker's two example pipelines over the manual table
// example_signal: a chain of two computed tables made in Go (example_signal_stats by a
// three-part make, example_signal_grade from it), and example_signal_energy made by an HTTP
// function. The service registers them at start; tests and the demo use them.
package examples

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/postgres"
)

// Names of the example computed tables.
const (
	Stats  = "example_signal_stats"
	Grade  = "example_signal_grade"
	Energy = "example_signal_energy"
)

// Register adds the example pipelines to reg; functionURL is where the energy function answers
// (EnergyFunction, served by the service itself at /examples/functions/energy).
func Register(reg *populate.Registry, functionURL string) error {
	for _, t := range []populate.Table{
		{
			Name: Stats, Target: "example_signal_stats", PrimaryKey: []string{"signal_id"},
			KeySource: "SELECT signal_id FROM example_signal", Upstream: []string{"example_signal"},
			Fetch: fetchSamples, Compute: computeStats,
		},
		{
			Name: Grade, Target: "example_signal_grade", PrimaryKey: []string{"signal_id"},
			KeySource: "SELECT signal_id FROM example_signal_stats", Upstream: []string{"example_signal_stats"},
			Make: makeGrade,
		},
		{
			Name: Energy, Target: "example_signal_energy", PrimaryKey: []string{"signal_id"},
			KeySource: "SELECT signal_id FROM example_signal", Upstream: []string{"example_signal"},
			FunctionURL: functionURL,
		},
	} {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	return nil
}

// fetchSamples is the first part of the stats make; it runs again inside the transaction, and a
// signal whose samples changed meanwhile is not committed.
func fetchSamples(ctx context.Context, db postgres.DBTX, key populate.Key) (any, error) {
	id, err := key.Int64("signal_id")
	if err != nil {
		return nil, err
	}
	var samples []float64
	if err := db.QueryRow(ctx, `SELECT samples FROM example_signal WHERE signal_id = $1`, id).Scan(&samples); err != nil {
		return nil, fmt.Errorf("fetch signal %d: %w", id, err)
	}
	return samples, nil
}

// computeStats fails on an empty signal, so the examples show error handling too.
func computeStats(_ context.Context, key populate.Key, fetched any) ([]populate.Row, error) {
	samples := fetched.([]float64)
	if len(samples) == 0 {
		return nil, &populate.MakeError{Class: "ValueError", Message: fmt.Sprintf("signal %v has no samples", key["signal_id"])}
	}
	sum, peak := 0.0, samples[0]
	for _, s := range samples {
		sum += s
		peak = max(peak, s)
	}
	return []populate.Row{{"n": len(samples), "mean": sum / float64(len(samples)), "peak": peak}}, nil
}

// makeGrade reads its input inside the transaction: a short make needs no three parts.
func makeGrade(ctx context.Context, tx pgx.Tx, key populate.Key) ([]populate.Row, error) {
	id, err := key.Int64("signal_id")
	if err != nil {
		return nil, err
	}
	var mean, peak float64
	if err := tx.QueryRow(ctx, `SELECT mean, peak FROM example_signal_stats WHERE signal_id = $1`, id).Scan(&mean, &peak); err != nil {
		return nil, fmt.Errorf("read stats of signal %d: %w", id, err)
	}
	grade := "low"
	switch {
	case peak > 0.9:
		grade = "high"
	case mean > 0.5:
		grade = "medium"
	}
	return []populate.Row{{"grade": grade}}, nil
}
