package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"drover.dev/services/batch-runner/internal/batch"

	"drover.dev/shared/problem"
)

// handleCurrent serves the live progress of the batch this process is running. Phase 2 of a
// batch writes nothing to the database, so while it runs this is the only account of it; it
// comes from memory and costs the batch nothing.
func handleCurrent(progress *batch.Tracker) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p := progress.Current()
		if p == nil {
			return problem.NotFoundf("no batch is running in this process")
		}
		return c.JSON(http.StatusOK, p.Snapshot())
	}
}
