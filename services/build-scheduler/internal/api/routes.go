// Package api is the build scheduler's HTTP adapter: it decodes and bounds requests, opens the
// transaction a transition runs in, and encodes answers. Decisions live in jobgraph and dag.
package api

import (
	_ "embed"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"

	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/backlog"
)

// OpenAPI documents every route Routes registers; the service serves it at /openapi.json and
// refuses to start when the two disagree.
//
//go:embed openapi.json
var OpenAPI []byte

// Submit bounds what POST /v1/groups accepts and how often each job may be handed out.
type Submit struct {
	Limits      dag.Limits
	MaxAttempts int
}

// Check reports a limit or an attempt count outside its range.
func (s Submit) Check() error {
	if s.MaxAttempts < 1 || s.MaxAttempts > math.MaxInt32 {
		return fmt.Errorf("max attempts %d: must be from 1 to %d", s.MaxAttempts, math.MaxInt32)
	}
	return s.Limits.Check()
}

// Routes lists every route of the service under /v1 (g).
func Routes(g *echo.Group, pool *pgxpool.Pool, graph *jobgraph.Graph, logs logstore.Store, submit Submit, queued *backlog.Gauge) {
	g.POST("/groups", handleSubmit(pool, graph, submit, queued))
	g.GET("/groups", handleListGroups(pool))
	g.GET("/groups/:id", handleGetGroup(pool))
	g.GET("/groups/:id/jobs", handleListJobs(pool))
	g.GET("/groups/:id/events", handleGroupEvents(pool))
	g.GET("/groups/:id/graph", handleGraph(pool))
	g.POST("/groups/:id/cancel", handleCancel(pool, graph))
	g.POST("/groups/:id/retry", handleRetry(pool, graph))
	g.GET("/jobs/:id", handleGetJob(pool))
	g.GET("/jobs/:id/log", handleLog(pool, logs))
	g.POST("/admin/recount", handleRecount(pool, graph))
}
