package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/postgres"
	"drover.dev/shared/web"
)

// handleBatchScores answers one scored batch: per miner its score, multipliers and weight, and
// per class its inputs and scores. A batch is at most a subnet's miners (256 UIDs) times its
// classes, so it is one page.
func handleBatchScores(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		scores, err := store.BatchScoresGet(c.Request().Context(), db, id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, scores)
	}
}

// handleWeights answers the latest weights per hotkey, ready for setting on chain.
func handleWeights(db postgres.DBTX) echo.HandlerFunc {
	return func(c *echo.Context) error {
		w, err := store.WeightsLatest(c.Request().Context(), db)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, w)
	}
}
