package store

import (
	"context"
	"fmt"

	"drover.dev/services/batch-runner/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// LatestBatchAge returns the seconds since the latest batch started, whatever its state;
// pgx.ErrNoRows (wrapped) before the first batch.
func LatestBatchAge(ctx context.Context, db postgres.DBTX) (float64, error) {
	age, err := queries.BatchLatestAgeGet(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("get latest batch age: %w", err)
	}
	return age, nil
}

// LatestBatchFailed returns 1 when the latest finished batch failed and 0 when it was done;
// pgx.ErrNoRows (wrapped) before the first finished batch.
func LatestBatchFailed(ctx context.Context, db postgres.DBTX) (float64, error) {
	failed, err := queries.BatchLatestFailedGet(ctx, db, dbsqlc.BatchLatestFailedGetParams{
		Failed: string(BatchFailed), Running: string(BatchRunning),
	})
	if err != nil {
		return 0, fmt.Errorf("get latest batch outcome: %w", err)
	}
	return failed, nil
}
