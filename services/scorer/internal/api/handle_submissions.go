package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/web"
)

// handleSubmissions lists the attempts to send the weights to the chain, newest first, as the
// shared list page (?limit=, ?cursor=; {"items", "next_cursor"}).
func handleSubmissions(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, err := web.ParseListParams(c)
		if err != nil {
			return err
		}
		var before int64
		if _, err := p.After(&before); err != nil {
			return err
		}
		subs, err := store.SubmissionList(c.Request().Context(), db, before, p.Limit)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(subs, p, func(s store.Submission) any { return s.ID }))
	}
}
