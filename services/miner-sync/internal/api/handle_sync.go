package api

import (
	"net/http"

	"github.com/labstack/echo/v5"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/web"
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

// handleSyncEvents lists sync outcomes, newest first.
func handleSyncEvents(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, before, err := web.ParseIDListParams(c)
		if err != nil {
			return err
		}
		events, err := store.SyncEventList(c.Request().Context(), db, before, p.Limit)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(events, p, func(e store.SyncEvent) any { return e.ID }))
	}
}
