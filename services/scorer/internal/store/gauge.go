package store

import (
	"context"
	"fmt"

	"drover.dev/shared/postgres"
)

// LatestWeightsAge returns the seconds since the batch whose weights are the latest was scored;
// pgx.ErrNoRows (wrapped) before any weights.
func LatestWeightsAge(ctx context.Context, db postgres.DBTX) (float64, error) {
	age, err := queries.BatchWeightsAgeGet(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("get latest weights age: %w", err)
	}
	return age, nil
}

// WeightsSentAge returns the seconds since Pylon last accepted the weights (a submission in
// outcome SubmissionSent); pgx.ErrNoRows (wrapped) before it ever did.
func WeightsSentAge(ctx context.Context, db postgres.DBTX) (float64, error) {
	age, err := queries.WeightSubmissionSentAgeGet(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("get weights sent age: %w", err)
	}
	return age, nil
}
