package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

type createResponse struct {
	JobID int64 `json:"job_id"`
	// Duplicate is true when a batch was already waiting or running: that job is returned.
	Duplicate bool `json:"duplicate"`
}

// handleCreate enqueues a batch now. The body is optional; it carries nothing yet.
func handleCreate(client *queue.Client) echo.HandlerFunc {
	return func(c *echo.Context) error {
		args := queue.RunBatchArgs{Reason: "api", RequestedAt: time.Now().UTC()}
		res, err := client.Insert(c.Request().Context(), args, nil)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, createResponse{JobID: res.Job.ID, Duplicate: res.UniqueSkippedAsDuplicate})
	}
}

// handleList lists batches, newest first; ?job_id= picks the batch of one run_batch job.
func handleList(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, before, err := web.ParseIDListParams(c)
		if err != nil {
			return err
		}
		jobID, err := web.QueryID(c, "job_id")
		if err != nil {
			return err
		}
		batches, err := store.BatchList(c.Request().Context(), db, before, p.Limit, jobID)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(batches, p, func(b store.Batch) any { return b.ID }))
	}
}

type batchDetail struct {
	store.Batch
	Reasons map[batch.Reason]int `json:"reasons"`
	Jobs    []store.Job          `json:"jobs"`
	Events  []store.Event        `json:"events"`
	// Shards are a sharded batch's shards, empty for a batch run in one process.
	Shards []store.Shard `json:"shards"`
}

func handleGet(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		d, err := detail(c.Request().Context(), db, id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, d)
	}
}

// detail reads batch id with its jobs, events and shards.
func detail(ctx context.Context, db postgres.DBTX, id int64) (batchDetail, error) {
	b, err := store.BatchGet(ctx, db, id)
	if errors.Is(err, store.ErrNotFound) {
		return batchDetail{}, problem.NotFoundf("no batch %d", id)
	}
	if err != nil {
		return batchDetail{}, err
	}
	d := batchDetail{Batch: b, Reasons: map[batch.Reason]int{}}
	if d.Jobs, err = store.JobList(ctx, db, id); err != nil {
		return d, err
	}
	if d.Events, err = store.EventList(ctx, db, id); err != nil {
		return d, err
	}
	if d.Shards, err = store.ShardList(ctx, db, id); err != nil {
		return d, err
	}
	for _, j := range d.Jobs {
		d.Reasons[j.Reason]++
	}
	return d, nil
}
