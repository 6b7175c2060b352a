package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// submissionPage is one page of GET /v1/weights/submissions, newest first.
type submissionPage struct {
	Submissions []store.Submission `json:"submissions"`
	NextCursor  string             `json:"next_cursor,omitempty"`
}

// handleSubmissions lists the attempts to send the weights to the chain, newest first, by cursor
// (?limit=1..100, default 20; ?cursor= the previous page's next_cursor).
func handleSubmissions(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		limit, before, err := pageParams(c)
		if err != nil {
			return err
		}
		subs, err := store.SubmissionList(c.Request().Context(), db, before, limit)
		if err != nil {
			return err
		}
		page := submissionPage{Submissions: subs}
		if len(subs) == limit {
			page.NextCursor = strconv.FormatInt(subs[len(subs)-1].ID, 10)
		}
		return c.JSON(http.StatusOK, page)
	}
}

// pageParams reads limit (1..100, default 20) and cursor (an id; 0 when absent).
func pageParams(c *echo.Context) (int, int64, error) {
	limit := 20
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return 0, 0, problem.Invalidf("limit", "must be 1 to 100")
		}
		limit = n
	}
	var before int64
	if s := c.QueryParam("cursor"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, problem.Invalidf("cursor", "is not a cursor this service returned")
		}
		before = n
	}
	return limit, before, nil
}
