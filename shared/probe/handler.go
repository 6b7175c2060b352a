package probe

import (
	_ "embed"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/shared/backlog"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// OpenAPI documents the probe routes; every service serves it as part of its /openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// Register adds the probe workers and the /v1/probes routes of service self; the workers log to
// logger.
func Register(workers *river.Workers, api *echo.Group, pool *pgxpool.Pool, ins queue.Inserters, self queue.Service, queued *backlog.Gauge, logger *slog.Logger) {
	river.AddWorker(workers, &Worker{Pool: pool, Inserters: ins, Self: self, Logger: logger})
	river.AddWorker(workers, &AckWorker{Pool: pool, Logger: logger})
	api.POST("/probes", handleCreate(pool, ins, self, queued))
	api.GET("/probes/:id", handleGet(pool, self))
}

type createRequest struct {
	Target string `json:"target"`
}

func handleCreate(pool *pgxpool.Pool, ins queue.Inserters, self queue.Service, queued *backlog.Gauge) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var req createRequest
		if err := web.DecodeJSON(c, &req); err != nil {
			return err
		}
		target, err := queue.ParseService(req.Target)
		if err != nil {
			return problem.Unprocessablef("target", "unknown service %q; known: %s", req.Target, queue.ServiceNames())
		}
		if err := queued.Admit(c, backlog.Key{Service: target, Queue: queue.QueueProbe}); err != nil {
			return err
		}
		var p Probe
		err = pgx.BeginFunc(c.Request().Context(), pool, func(tx pgx.Tx) error {
			p, err = Send(c.Request().Context(), tx, ins, self, target)
			return err
		})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, p)
	}
}

func handleGet(pool *pgxpool.Pool, self queue.Service) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		p, err := Get(c.Request().Context(), pool, self, id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, p)
	}
}
