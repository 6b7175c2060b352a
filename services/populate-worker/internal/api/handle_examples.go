package api

import (
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/examples"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/web"
)

type seedRequest struct {
	Signals int `json:"signals"`
	Empty   int `json:"empty"`
}

// handleSeed inserts example upstream rows in one transaction: one change notification.
func handleSeed(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var req seedRequest
		if err := web.DecodeJSON(c, &req); err != nil {
			return err
		}
		var res examples.SeedResult
		err := pgx.BeginFunc(c.Request().Context(), e.Pool(), func(tx pgx.Tx) error {
			var err error
			res, err = examples.Seed(c.Request().Context(), tx, req.Signals, req.Empty)
			return err
		})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, res)
	}
}
