package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

type createResponse struct {
	JobID int64 `json:"job_id"`
	// BatchID is the job's batch, for GET /v1/batches/{id} and its cancel: the new batch, or the
	// one already waiting or running (Duplicate). Nil when the job has not started it (waitBatch).
	BatchID *int64 `json:"batch_id"`
	// Duplicate is true when a batch was already waiting or running: that job is returned.
	Duplicate bool `json:"duplicate"`
}

// handleCreate enqueues a batch now and answers its job and batch. The body is optional; it
// carries nothing yet.
func handleCreate(db postgres.DBTX, client *queue.Client) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ctx := c.Request().Context()
		args := queue.RunBatchArgs{Reason: "api", RequestedAt: time.Now().UTC()}
		res, err := client.Insert(ctx, args, nil)
		if err != nil {
			return err
		}
		batchID, err := waitBatch(ctx, db, client, res.Job.ID)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, createResponse{JobID: res.Job.ID, BatchID: batchID, Duplicate: res.UniqueSkippedAsDuplicate})
	}
}

// batchWait bounds how long POST /v1/batches waits for its job's batch, and batchPoll is how
// often it looks. The batch row is created when a worker starts the job (phase 1 takes its id
// from the row's identity, and a retried job finds its row again by job id), which a free worker
// does within moments of the insert: waiting for it lets the answer name the batch to show or
// cancel, without a second way of creating batches.
const (
	batchWait = 10 * time.Second
	batchPoll = 20 * time.Millisecond
)

// waitBatch returns the id of run_batch job jobID's batch once the job has created it. It returns
// nil, without waiting longer, once the job is not about to create one (River holds it back,
// snoozed behind a batch another job runs, or it ended without one), or after batchWait.
func waitBatch(ctx context.Context, db postgres.DBTX, client *queue.Client, jobID int64) (*int64, error) {
	deadline := time.NewTimer(batchWait)
	defer deadline.Stop()
	for {
		// The job first, then the batches: a job that has ended committed its batch with its
		// end, so a batch list read after it sees the batch if there is one.
		job, err := client.JobGet(ctx, jobID)
		if errors.Is(err, rivertype.ErrNotFound) {
			return nil, nil // deleted in River UI: no batch to name
		}
		if err != nil {
			return nil, fmt.Errorf("read run_batch job %d: %w", jobID, err)
		}
		batches, err := store.BatchList(ctx, db, 0, 1, jobID)
		if err != nil {
			return nil, err
		}
		if len(batches) > 0 {
			return &batches[0].ID, nil
		}
		if !slices.Contains([]rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning}, job.State) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, nil
		case <-time.After(batchPoll):
		}
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
