package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/problem"
)

// handleCurrent serves the live progress of the batch this process is running. Phase 2 of a
// batch writes nothing to the database, so while it runs this is the only account of it; it
// comes from memory and costs the batch nothing.
func (a *API) handleCurrent(c *echo.Context) error {
	p := a.Progress.Current()
	if p == nil {
		return problem.NotFoundf("no batch is running in this process")
	}
	return c.JSON(http.StatusOK, p.Snapshot())
}
