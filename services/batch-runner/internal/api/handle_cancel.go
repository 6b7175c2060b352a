package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

type cancelResponse struct {
	ID int64 `json:"id"`
	// RiverJobIDs are the jobs told to stop: the batch's run_batch job, and the run_batch_shard
	// jobs of its unfinished shards.
	RiverJobIDs []int64 `json:"river_job_ids"`
	// RequestID is this request's id (its X-Request-Id), which the batch's error names once the
	// worker has stopped it.
	RequestID string `json:"request_id"`
}

// handleCancel cancels a running batch through River's JobCancelTx, the call River UI's Cancel
// makes too: the worker running it, on whichever replica, sees its context cancelled, fails the
// batch and ends its job cancelled in one transaction. So the answer is 202: the batch shows
// failed once the worker has recorded it. A batch that has ended is a 409.
//
// The worker cannot tell from River who cancelled its job, so the request is recorded with each
// running job it cancels (store.CancelCreate), in the transaction that cancels them, and the
// batch's error names it: "cancelled through the API (request …)" rather than from River UI.
func handleCancel(pool *pgxpool.Pool, client *queue.Client) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		b, err := store.BatchGet(ctx, pool, id)
		if errors.Is(err, store.ErrNotFound) {
			return problem.NotFoundf("no batch %d", id)
		}
		if err != nil {
			return err
		}
		if b.State != store.BatchRunning {
			return problem.Conflictf("batch %d is %s: only a running batch can be cancelled", id, b.State)
		}
		// The request id middleware has set the answer's X-Request-Id, the one the access log names.
		res := cancelResponse{ID: id, RequestID: c.Response().Header().Get(echo.HeaderXRequestID)}
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if res.RiverJobIDs, err = batchJobs(ctx, tx, b); err != nil {
				return err
			}
			return cancelJobs(ctx, tx, client, b.ID, res.RiverJobIDs, res.RequestID)
		})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, res)
	}
}

// cancelJobs cancels jobs, of batch batchID, in tx, and records that request requestID cancelled
// the attempt of each that is running, for its worker to read. A job River no longer has is left
// out: there is nothing to stop.
func cancelJobs(ctx context.Context, tx pgx.Tx, client *queue.Client, batchID int64, jobs []int64, requestID string) error {
	for _, jobID := range jobs {
		job, err := client.JobCancelTx(ctx, tx, jobID)
		if errors.Is(err, rivertype.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cancel River job %d of batch %d: %w", jobID, batchID, err)
		}
		if job.State != rivertype.JobStateRunning {
			continue // cancelled at once, or ended already: no worker reads the record
		}
		if err := store.CancelCreate(ctx, tx, job.ID, job.Attempt, batchID, requestID); err != nil {
			return err
		}
	}
	return nil
}

// batchJobs lists the River jobs working batch b: its run_batch job and its unfinished shards'.
func batchJobs(ctx context.Context, db postgres.DBTX, b store.Batch) ([]int64, error) {
	jobs := []int64{b.RiverJobID}
	shards, err := store.ShardList(ctx, db, b.ID)
	if err != nil {
		return nil, err
	}
	for _, s := range shards {
		if s.RiverJobID != nil && (s.State == store.ShardPending || s.State == store.ShardRunning) {
			jobs = append(jobs, *s.RiverJobID)
		}
	}
	return jobs, nil
}
