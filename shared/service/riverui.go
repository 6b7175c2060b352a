package service

import (
	"cmp"
	"fmt"

	"github.com/labstack/echo/v5"
	"riverqueue.com/riverui"

	"drover.dev/shared/web"
)

// RiverUIPath is where every service serves River UI for its own schema.
const RiverUIPath = "/riverui"

// DefaultRiverUIUser logs into River UI when the configuration names no user (a config struct
// built in code).
const DefaultRiverUIUser = "drover"

// mountRiverUI serves River UI for the service's schema at /riverui/ on the service's own
// server. It shows and changes (pause, retry, cancel, delete) the service's jobs, so it sits behind
// basic auth, which a browser speaks by itself: the user is RIVERUI_USER and the password any of
// the API tokens, so whoever may call /v1 may operate its queues, and a service that refuses to
// start without tokens never serves River UI open. Its health checks stay open for probes.
func mountRiverUI(deps *Deps) (*riverui.Handler, error) {
	handler, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(deps.client, nil),
		Logger:    deps.Logger.With("component", "riverui"),
		Prefix:    RiverUIPath,
	})
	if err != nil {
		return nil, fmt.Errorf("river ui: %w", err)
	}
	cfg := deps.spec.Config
	realm := fmt.Sprintf("River UI of %s", deps.Service)
	auth := web.BasicAuth(realm, cmp.Or(cfg.RiverUIUser, DefaultRiverUIUser), cfg.APITokens, cfg.AuthDisabled)
	serve := echo.WrapHandler(handler)
	e := deps.Server.Echo
	e.Any(RiverUIPath, serve, auth)
	e.Any(RiverUIPath+"/*", serve, auth)
	e.GET(RiverUIPath+"/api/health-checks/:name", serve)
	return handler, nil
}
