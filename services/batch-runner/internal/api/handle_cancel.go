package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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
}

// handleCancel cancels a running batch through River's JobCancel, as River UI's Cancel does: the
// worker running it, on whichever replica, sees its context cancelled, fails the batch and ends
// its job cancelled in one transaction. So the answer is 202: the batch shows failed once the
// worker has recorded it. A batch that has ended is a 409.
func handleCancel(db postgres.DBTX, client *queue.Client) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		b, err := store.BatchGet(ctx, db, id)
		if errors.Is(err, store.ErrNotFound) {
			return problem.NotFoundf("no batch %d", id)
		}
		if err != nil {
			return err
		}
		if b.State != store.BatchRunning {
			return problem.Conflictf("batch %d is %s: only a running batch can be cancelled", id, b.State)
		}
		jobs, err := batchJobs(ctx, db, b)
		if err != nil {
			return err
		}
		for _, jobID := range jobs {
			if _, err := client.JobCancel(ctx, jobID); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
				return fmt.Errorf("cancel River job %d of batch %d: %w", jobID, id, err)
			}
		}
		return c.JSON(http.StatusAccepted, cancelResponse{ID: id, RiverJobIDs: jobs})
	}
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
