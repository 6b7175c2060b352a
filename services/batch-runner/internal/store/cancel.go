package store

import (
	"context"
	"fmt"

	"drover.dev/services/batch-runner/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// CancelCreate records that the API request requestID cancelled attempt jobAttempt of the River
// job riverJobID, which works batch batchID. It belongs in the transaction that cancels the job:
// River's cancellation reaches the worker only once that commits, and the worker, whose context
// looks the same whoever cancelled it, reads this record (CancelRequestGet) to say who did.
func CancelCreate(ctx context.Context, db postgres.DBTX, riverJobID int64, jobAttempt int, batchID int64, requestID string) error {
	err := queries.BatchCancelCreate(ctx, db, dbsqlc.BatchCancelCreateParams{
		RiverJobID: riverJobID, JobAttempt: int32(jobAttempt), BatchID: batchID, RequestID: requestID,
	})
	if err != nil {
		return fmt.Errorf("record cancel of job %d attempt %d of batch %d: %w", riverJobID, jobAttempt, batchID, err)
	}
	return nil
}

// CancelRequestGet returns the id of the API request that cancelled attempt jobAttempt of the
// River job riverJobID, or ErrNotFound when no API request did: River UI's Cancel stopped it.
func CancelRequestGet(ctx context.Context, db postgres.DBTX, riverJobID int64, jobAttempt int) (string, error) {
	id, err := queries.BatchCancelGet(ctx, db, dbsqlc.BatchCancelGetParams{RiverJobID: riverJobID, JobAttempt: int32(jobAttempt)})
	if err != nil {
		return "", fmt.Errorf("cancel request of job %d attempt %d: %w", riverJobID, jobAttempt, mapErr(err))
	}
	return id, nil
}
