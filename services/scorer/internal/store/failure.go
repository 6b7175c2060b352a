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

// FailureRecord records that River job jobID, carrying batch batchID, was not scored: its inputs
// can never be, or River UI's Cancel stopped it. It reports false when the job had recorded a
// failure before (it was retried in River UI), which is kept.
func FailureRecord(ctx context.Context, tx pgx.Tx, jobID, batchID int64, cause error) (bool, error) {
	n, err := queries.FailureInsert(ctx, tx, dbsqlc.FailureInsertParams{RiverJobID: jobID, BatchID: batchID, Error: cause.Error()})
	if err != nil {
		return false, fmt.Errorf("record scoring failure of batch %d (job %d): %w", batchID, jobID, err)
	}
	return n == 1, nil
}

// ScoringOutcome is what a score_batch job finds recorded before it scores.
type ScoringOutcome struct {
	// Scored: the batch is scored already. Failed: this job recorded a failure.
	Scored, Failed bool
}

// ScoringOutcomeOf returns what is recorded of the scoring of batch batchID by job jobID. Either
// means the job is being worked again after it ended, since each commits with the job's end.
func ScoringOutcomeOf(ctx context.Context, db postgres.DBTX, jobID, batchID int64) (ScoringOutcome, error) {
	row, err := queries.ScoringOutcomeGet(ctx, db, dbsqlc.ScoringOutcomeGetParams{BatchID: batchID, RiverJobID: jobID})
	if err != nil {
		return ScoringOutcome{}, fmt.Errorf("scoring outcome of batch %d (job %d): %w", batchID, jobID, err)
	}
	return ScoringOutcome{Scored: row.Scored, Failed: row.Failed}, nil
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
