// Package api is batch-runner's HTTP adapter: enqueue a batch now, list batches, show one with
// its stage timings, counts, jobs and events, and follow the batch in flight.
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

// API holds what the handlers need.
type API struct {
	Pool *pgxpool.Pool
	// Client inserts run_batch into this service's own queue.
	Client *queue.Client
	// Progress is the live record of the batch this process is running.
	Progress *batch.Tracker
}

// Routes lists every route of the service under /v1.
func (a *API) Routes(g *echo.Group) {
	g.POST("/batches", a.handleCreate)
	g.GET("/batches", a.handleList)
	g.GET("/batches/current", a.handleCurrent)
	g.GET("/batches/:id", a.handleGet)
}
