package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

type createResponse struct {
	JobID int64 `json:"job_id"`
	// Duplicate is true when a batch was already waiting or running: that job is returned.
	Duplicate bool `json:"duplicate"`
}

// handleCreate enqueues a batch now. The body is optional; it carries nothing yet.
func (a *API) handleCreate(c *echo.Context) error {
	args := queue.RunBatchArgs{Reason: "api", RequestedAt: time.Now().UTC()}
	res, err := a.Client.Insert(c.Request().Context(), args, nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, createResponse{JobID: res.Job.ID, Duplicate: res.UniqueSkippedAsDuplicate})
}

type listResponse struct {
	Batches []store.Batch `json:"batches"`
	// NextCursor is the cursor of the next page, absent on the last.
	NextCursor *string `json:"next_cursor,omitempty"`
}

func (a *API) handleList(c *echo.Context) error {
	before, err := queryInt(c, "cursor", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 20)
	if err != nil {
		return err
	}
	if limit < 1 || limit > 100 {
		return problem.Invalidf("limit", "must be between 1 and 100, not %d", limit)
	}
	jobID, err := queryInt(c, "job_id", 0)
	if err != nil {
		return err
	}
	batches, err := store.BatchList(c.Request().Context(), a.Pool, before, int(limit), jobID)
	if err != nil {
		return err
	}
	resp := listResponse{Batches: batches}
	if len(batches) == int(limit) {
		next := strconv.FormatInt(batches[len(batches)-1].ID, 10)
		resp.NextCursor = &next
	}
	return c.JSON(http.StatusOK, resp)
}

func queryInt(c *echo.Context, name string, def int64) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, problem.Invalidf(name, "must be a non-negative integer, not %q", raw)
	}
	return n, nil
}

type batchDetail struct {
	store.Batch
	Reasons map[batch.Reason]int `json:"reasons"`
	Jobs    []store.Job          `json:"jobs"`
	Events  []store.Event        `json:"events"`
	// Shards are a sharded batch's shards, empty for a batch run in one process.
	Shards []store.Shard `json:"shards"`
}

func (a *API) handleGet(c *echo.Context) error {
	id, err := web.PathInt64(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	b, err := store.BatchGet(ctx, a.Pool, id)
	if errors.Is(err, store.ErrNotFound) {
		return problem.NotFoundf("no batch %d", id)
	}
	if err != nil {
		return err
	}
	d := batchDetail{Batch: b, Reasons: map[batch.Reason]int{}}
	if d.Jobs, err = store.JobList(ctx, a.Pool, id); err != nil {
		return err
	}
	if d.Events, err = store.EventList(ctx, a.Pool, id); err != nil {
		return err
	}
	if d.Shards, err = store.ShardList(ctx, a.Pool, id); err != nil {
		return err
	}
	for _, j := range d.Jobs {
		d.Reasons[j.Reason]++
	}
	return c.JSON(http.StatusOK, d)
}
