package web

import (
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
)

// quietPaths are answered to probes and scrapers every few seconds, as is River UI's health
// check; they log at debug so that info shows the work and the requests of people.
var quietPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// quietPrefix is River UI's health checks (see service.RiverUIPath).
const quietPrefix = "/riverui/api/health-checks/"

func quiet(path string) bool { return quietPaths[path] || strings.HasPrefix(path, quietPrefix) }

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
			case quiet(c.Request().URL.Path):
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
