package service

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

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
//
// River UI's handler, once started, counts the schema's jobs by state every 10 s or so, whether
// anyone looks or not: a count of river_job that took 30–700 ms of Postgres a time while a build
// group ran, in every process of a service (each build-worker serves River UI too). So the
// counting starts with the first request to River UI (lazyRiverUI), and nobody pays for it
// before; the handler answers without its caches all the same, counting when asked.
func mountRiverUI(deps *Deps) (*lazyRiverUI, error) {
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
	ui := &lazyRiverUI{handler: handler, logger: deps.Logger}
	serve := echo.WrapHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ui.start()
		handler.ServeHTTP(w, r)
	}))
	e := deps.Server.Echo
	e.Any(RiverUIPath, serve, auth)
	e.Any(RiverUIPath+"/*", serve, auth)
	e.GET(RiverUIPath+"/api/health-checks/:name", echo.WrapHandler(handler))
	return ui, nil
}

// lazyRiverUI starts River UI's background counting (riverui.Handler.Start) at its first
// request once the service serves (see mountRiverUI), and stops it with the service.
type lazyRiverUI struct {
	handler *riverui.Handler
	logger  *slog.Logger
	mu      sync.Mutex
	ctx     context.Context // the service serves River UI while it lasts; nil before
	started bool
}

// serveUntil makes River UI startable, for as long as ctx lasts.
func (u *lazyRiverUI) serveUntil(ctx context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ctx = ctx
}

// start starts the handler's background services once, if the service serves.
func (u *lazyRiverUI) start() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started || u.ctx == nil {
		return
	}
	u.started = true
	if err := u.handler.Start(u.ctx); err != nil {
		u.logger.Warn("start river ui's counters", "error", err)
	}
}
