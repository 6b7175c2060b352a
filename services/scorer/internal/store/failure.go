package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/scorer/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// FailureRecord records that River job jobID, carrying batch batchID, can never be scored.
func FailureRecord(ctx context.Context, tx pgx.Tx, jobID, batchID int64, cause error) error {
	err := queries.FailureInsert(ctx, tx, dbsqlc.FailureInsertParams{RiverJobID: jobID, BatchID: batchID, Error: cause.Error()})
	if err != nil {
		return fmt.Errorf("record scoring failure of batch %d (job %d): %w", batchID, jobID, err)
	}
	return nil
}

// failureOf returns why the latest attempt to score batch id failed, as a conflict for the API,
// or ErrNotFound when none did.
func failureOf(ctx context.Context, db postgres.DBTX, id int64) error {
	msg, err := queries.FailureLatestGet(ctx, db, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("scores of batch %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("get scoring failure of batch %d: %w", id, err)
	}
	return problem.Conflictf("batch %d could not be scored: %s", id, msg)
}
