// Package api is batch-runner's HTTP adapter: enqueue a batch now, list batches, show one with
// its stage timings, counts, jobs and events, follow the batch in flight, and cancel it.
package api

import (
	_ "embed"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
)

// OpenAPI documents every route Routes registers; the service refuses to start when they differ.
//
//go:embed openapi.json
var OpenAPI []byte

// Routes lists every route of the service under /v1 (g). client inserts run_batch into this
// service's own queue; progress is the live record of the batch this process is running.
func Routes(g *echo.Group, pool *pgxpool.Pool, client *queue.Client, progress *batch.Tracker) {
	g.POST("/batches", handleCreate(pool, client))
	g.GET("/batches", handleList(pool))
	g.GET("/batches/current", handleCurrent(progress))
	g.GET("/batches/:id", handleGet(pool))
	g.POST("/batches/:id/cancel", handleCancel(pool, client))
}
