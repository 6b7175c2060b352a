package api

import (
	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/populate"
)

// Routes adds the populate routes to api (the authenticated /v1 group). seed, when not nil,
// serves POST /v1/examples/seed.
func Routes(api *echo.Group, e *populate.Engine, seed echo.HandlerFunc) {
	api.GET("/tables", handleTableList(e))
	api.POST("/tables/:name/populate", handlePopulate(e))
	api.POST("/tables/:name/schedule", handleSchedule(e))
	api.POST("/tables/:name/cleanup", handleCleanup(e))
	api.GET("/tables/:name/progress", handleProgress(e))
	api.GET("/jobs", handleJobList(e))
	api.GET("/jobs/:table/:key_hash", handleJobGet(e))
	api.POST("/jobs/:table/:key_hash/ignore", handleJobIgnore(e))
	api.POST("/jobs/:table/:key_hash/reschedule", handleJobReschedule(e))
	if seed != nil {
		api.POST("/examples/seed", seed)
	}
}
