package api

import (
	"time"

	"github.com/labstack/echo/v5"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/examples"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/signing"
	"drover.dev/shared/backlog"
	"drover.dev/shared/web"
)

// Examples says which example routes a service serves: the HTTP function make of
// example_signal_energy (outside /v1, as an external function would be) and POST
// /v1/examples/seed. With FunctionSecret the function refuses calls not signed with it, as an
// external function checks the worker's signature; without, it is open.
type Examples struct {
	Function       bool
	Seed           bool
	FunctionSecret []string
}

// Routes lists every route of the service: the populate API under /v1 and the examples ex
// enables. writeTimeout is the server's, which a waiting populate call must answer within. A
// populate run or a schedule is refused (429) while the makes' queue holds MAX_QUEUED waiting
// jobs; it is fed a few makes at a time (FEED_AHEAD, a run's processes), so this is a backstop
// rather than the everyday bound. Defining and retiring tables takes admin's scope, not /v1's
// tokens: those routes are outside its group, behind their own check.
func Routes(s *web.Server, e *populate.Engine, ex Examples, writeTimeout time.Duration, queued *backlog.Gauge, admin Admin) {
	makes := queued.Guard(backlog.Key{Service: queue.PopulateWorker, Queue: queue.QueuePopulate})
	s.API.GET("/tables", handleTableList(e))
	s.API.GET("/tables/:name", handleTableGet(e))
	s.Echo.PUT("/v1/tables/:name", handleTablePut(e), adminOnly(admin))
	s.Echo.DELETE("/v1/tables/:name", handleTableDelete(e), adminOnly(admin))
	s.API.POST("/tables/:name/populate", handlePopulate(e, writeTimeout), makes)
	s.API.GET("/populate-runs", handleRunList(e))
	s.API.GET("/populate-runs/:id", handleRunGet(e))
	s.API.POST("/populate-runs/:id/cancel", handleRunCancel(e))
	s.API.POST("/tables/:name/schedule", handleSchedule(e), makes)
	s.API.POST("/tables/:name/cleanup", handleCleanup(e))
	s.API.GET("/tables/:name/progress", handleProgress(e))
	s.API.POST("/tables/:name/ignore", handleTableIgnore(e))
	s.API.GET("/jobs", handleJobList(e))
	s.API.GET("/jobs/:table/:key_hash", handleJobGet(e))
	s.API.POST("/jobs/:table/:key_hash/ignore", handleJobIgnore(e))
	s.API.POST("/jobs/:table/:key_hash/reschedule", handleJobReschedule(e))
	if ex.Function {
		fn := examples.EnergyFunction(e.Pool())
		if len(ex.FunctionSecret) > 0 {
			fn = signing.Middleware(ex.FunctionSecret, 1<<16, fn)
		}
		s.Echo.POST("/examples/functions/energy", echo.WrapHandler(fn))
	}
	if ex.Seed {
		s.API.POST("/examples/seed", handleSeed(e))
	}
}
