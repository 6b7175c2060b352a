package web

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
)

// quietPaths are answered to probes and scrapers every few seconds; they log at debug so that
// info shows the work and the requests of people.
var quietPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// riverUIPrefix is where River UI is served (see service.RiverUIPath). An open River UI page
// polls its API every few seconds, and probes use its health checks: those reads log at debug.
// What changes River's state through it (retry, cancel, delete a job, pause a queue) is a
// POST, PUT, PATCH or DELETE and logs at info like any other request of a person.
const riverUIPrefix = "/riverui/"

func quiet(method, path string) bool {
	if quietPaths[path] {
		return true
	}
	read := method == http.MethodGet || method == http.MethodHead
	return read && strings.HasPrefix(path, riverUIPrefix)
}

// accessLog logs one line per request with its id, route, status and duration; probes and
// scrapes that succeed log at debug.
func accessLog(logger *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			start := time.Now()
			err := next(c)
			status := responseStatus(c, err)
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case quiet(c.Request().Method, c.Request().URL.Path):
				level = slog.LevelDebug
			}
			logger.LogAttrs(c.Request().Context(), level, "http request",
				slog.String("request_id", requestID(c)),
				slog.String("method", c.Request().Method),
				slog.String("path", c.Request().URL.Path),
				slog.Int("status", status),
				slog.Duration("duration", time.Since(start)),
			)
			return err
		}
	}
}

func requestID(c *echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
