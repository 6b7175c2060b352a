package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

type syncAnswer struct {
	JobID         int64              `json:"job_id"`
	State         rivertype.JobState `json:"state"`
	AlreadyQueued bool               `json:"already_queued"`
}

// handleSync enqueues a sync now. sync_metagraph is unique while waiting or running, so a second
// request while one is queued gets that job back (200) instead of a new one (202).
func handleSync(ins *queue.Client) echo.HandlerFunc {
	return func(c *echo.Context) error {
		res, err := ins.Insert(c.Request().Context(), queue.SyncMetagraphArgs{Reason: "api"}, nil)
		if err != nil {
			return err
		}
		answer := syncAnswer{JobID: res.Job.ID, State: res.Job.State, AlreadyQueued: res.UniqueSkippedAsDuplicate}
		if answer.AlreadyQueued {
			return c.JSON(http.StatusOK, answer)
		}
		return c.JSON(http.StatusAccepted, answer)
	}
}

// eventPage is one page of GET /v1/sync/events, newest first.
type eventPage struct {
	Events     []store.SyncEvent `json:"events"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

func handleSyncEvents(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		limit, err := limitParam(c, 20, 100)
		if err != nil {
			return err
		}
		var before int64
		if s := c.QueryParam("cursor"); s != "" {
			if before, err = strconv.ParseInt(s, 10, 64); err != nil || before <= 0 {
				return problem.Invalidf("cursor", "is not a cursor this service returned")
			}
		}
		events, err := store.SyncEventList(c.Request().Context(), db, before, limit)
		if err != nil {
			return err
		}
		page := eventPage{Events: events}
		if page.Events == nil {
			page.Events = []store.SyncEvent{}
		}
		if len(events) == limit {
			page.NextCursor = strconv.FormatInt(events[len(events)-1].ID, 10)
		}
		return c.JSON(http.StatusOK, page)
	}
}
