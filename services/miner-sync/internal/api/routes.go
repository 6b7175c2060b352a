package api

import (
	_ "embed"

	"github.com/labstack/echo/v5"

	"drover.dev/queue"
	"drover.dev/shared/postgres"
)

// OpenAPI documents the routes Routes adds; the service refuses to start if they disagree.
//
//go:embed openapi.json
var OpenAPI []byte

// Routes adds miner-sync's routes to api (the authenticated /v1 group). ins inserts into
// miner-sync's own queue.
func Routes(api *echo.Group, db postgres.DBTX, ins *queue.Client) {
	api.GET("/miners", handleMinerList(db))
	api.POST("/sync", handleSync(ins))
	api.GET("/sync/events", handleSyncEvents(db))
}
