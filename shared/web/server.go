// Package web is the HTTP server every Drover service runs: echo v5 with request ids, an access
// log, a body-size limit, explicit timeouts, bearer-token auth on /v1, Prometheus metrics, health
// and readiness endpoints, and one error handler that answers RFC 9457 problem+json.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"drover.dev/shared/tracing"
)

// Config is the server's part of a service's configuration.
type Config struct {
	Tokens            []string // bearer tokens accepted on /v1
	AuthDisabled      bool     // serve /v1 without tokens (local development)
	BodyLimit         int64
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
}

// ErrNoTokens is returned by New when /v1 would be open without auth having been disabled
// explicitly.
var ErrNoTokens = errors.New("no API tokens configured: set API_TOKENS, or AUTH_DISABLED=true for local use")

// Check reports whether one dependency of the service is usable; /readyz runs them all.
type Check struct {
	Name string
	Func func(ctx context.Context) error
}

// Server is a service's HTTP server. Routes go on API (under /v1, authenticated) or on Echo.
type Server struct {
	Echo    *echo.Echo
	API     *echo.Group
	Metrics *prometheus.Registry

	http   *http.Server
	gate   *gate
	logger *slog.Logger
}

// New builds the server with its middleware and the open endpoints /healthz, /readyz and
// /metrics.
func New(cfg Config, logger *slog.Logger, checks ...Check) (*Server, error) {
	if len(cfg.Tokens) == 0 && !cfg.AuthDisabled {
		return nil, ErrNoTokens
	}
	e := echo.NewWithConfig(echo.Config{Logger: logger})
	s := &Server{Echo: e, Metrics: newRegistry(), logger: logger}
	e.HTTPErrorHandler = errorHandler(logger)
	e.Use(
		middleware.RequestID(),
		accessLog(logger),
		instrument(s.Metrics),
		middleware.Recover(),
		middleware.BodyLimit(cfg.BodyLimit),
		checkParams,
	)
	e.GET("/healthz", func(c *echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", readiness(checks))
	e.GET("/metrics", echo.WrapHandler(metricsHandler(s.Metrics)))
	s.API = e.Group("/v1", bearerAuth(cfg.Tokens, cfg.AuthDisabled))
	s.gate = &gate{next: e}
	s.gate.open.Store(true)
	s.http = &http.Server{
		Handler:           tracing.Handler(s.gate),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Serve answers requests on ln until Shutdown is called.
func (s *Server) Serve(ln net.Listener) error {
	s.logger.Info("http listening", "addr", ln.Addr().String())
	if err := s.http.Serve(problemListener{ln}); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	return nil
}

// Shutdown stops accepting connections and waits for requests in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.http.Shutdown(ctx); err != nil {
		return fmt.Errorf("drain http: %w", err)
	}
	return nil
}

func readiness(checks []Check) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
		defer cancel()
		status, code := map[string]string{}, http.StatusOK
		for _, ch := range checks {
			status[ch.Name] = "ok"
			if err := ch.Func(ctx); err != nil {
				status[ch.Name], code = err.Error(), http.StatusServiceUnavailable
			}
		}
		return c.JSON(code, status)
	}
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
