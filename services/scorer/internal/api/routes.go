package api

import (
	_ "embed"

	"github.com/labstack/echo/v5"

	"drover.dev/shared/postgres"
)

// OpenAPI documents the routes Routes adds; the service refuses to start if they disagree.
//
//go:embed openapi.json
var OpenAPI []byte

// Routes adds scorer's routes to api (the authenticated /v1 group).
func Routes(api *echo.Group, db postgres.DBTX) {
	api.GET("/batches/:id/scores", handleBatchScores(db))
	api.GET("/weights", handleWeights(db))
	api.GET("/weights/submissions", handleSubmissions(db))
}
