package api

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// handleRunList lists populate runs newest first, filtered by ?table= and ?state=.
func handleRunList(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, before, err := web.ParseIDListParams(c)
		if err != nil {
			return err
		}
		f := populate.RunFilter{Table: c.QueryParam("table"), Before: before, Limit: p.Limit}
		if s := c.QueryParam("state"); s != "" {
			f.State = populate.RunState(s)
			if !slices.Contains(populate.RunStates(), f.State) {
				return problem.Invalidf("state", "must be one of %v", populate.RunStates())
			}
		}
		runs, err := e.ListRuns(c.Request().Context(), f)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(runs, p, func(r populate.Run) any { return r.ID }))
	}
}
