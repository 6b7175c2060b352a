// Package api is the build scheduler's HTTP adapter: it decodes and bounds requests, opens the
// transaction a transition runs in, and encodes answers. Decisions live in jobgraph and dag.
package api

import (
	_ "embed"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"

	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
)

// OpenAPI documents every route Routes registers; the service serves it at /openapi.json and
// refuses to start when the two disagree.
//
//go:embed openapi.json
var OpenAPI []byte

// API holds what the handlers need.
type API struct {
	Pool        *pgxpool.Pool
	Graph       *jobgraph.Graph
	Logs        logstore.Store
	Limits      dag.Limits
	MaxAttempts int
}

// Routes lists every route of the service under /v1.
func (a *API) Routes(g *echo.Group) {
	g.POST("/groups", a.handleSubmit)
	g.GET("/groups", a.handleListGroups)
	g.GET("/groups/:id", a.handleGetGroup)
	g.GET("/groups/:id/jobs", a.handleListJobs)
	g.GET("/groups/:id/events", a.handleGroupEvents)
	g.POST("/groups/:id/cancel", a.handleCancel)
	g.POST("/groups/:id/retry", a.handleRetry)
	g.GET("/jobs/:id", a.handleGetJob)
	g.GET("/jobs/:id/log", a.handleLog)
	g.POST("/admin/recount", a.handleRecount)
}
