package service

import (
	"cmp"
	"context"
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/queue"
	"drover.dev/shared/metrics"
	"drover.dev/shared/postgres"
	"drover.dev/shared/web"
)

// ProcessesOpenAPI documents GET /v1/processes, which every service serves as part of its
// /openapi.json.
//
//go:embed processes.json
var ProcessesOpenAPI []byte

// newProcess is the liveness of the process d runs (queue.Process), with its metrics on d's
// /metrics: the processes of the schema by state, read at scrape time, and the processes this
// process's sweeps declared dead and the jobs they gave back by kind.
func (d *Deps) newProcess(id string) *queue.Process {
	rescued := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_queue_jobs_rescued_total",
		Help: "River jobs of dead processes that this process's liveness sweeps gave back, by kind (at zero from a kind's first attempt here).",
	}, []string{"kind"})
	dead := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "drover_queue_processes_declared_dead_total",
		Help: "Processes of this service's schema that this process's liveness sweeps declared dead (they stopped renewing their record for LIVENESS_TIMEOUT).",
	})
	d.rescued = rescued
	d.Server.Metrics.MustRegister(rescued, dead, metrics.NewQueryGauge(d.Pool, d.failures, processesGauge(d.Service)))
	return queue.NewProcess(d.Pool, d.Service, queue.ProcessConfig{
		ID: id, Name: cmp.Or(d.spec.Name, string(d.Service)), Timeout: d.spec.Config.LivenessTimeout,
		Logger:    d.Logger,
		Takeovers: d.Takeovers,
		OnRescue:  func(kind string, n int) { rescued.WithLabelValues(kind).Add(float64(n)) },
		OnDead:    func(n int) { dead.Add(float64(n)) },
	})
}

// processesGauge counts the schema's processes by state: live, and dead until a sweep gives their
// jobs back. A dead one that stays is a sweep that does not run.
func processesGauge(svc queue.Service) metrics.Gauge {
	return metrics.Gauge{
		Name:   "drover_queue_processes",
		Help:   "River client processes of this service's schema by liveness state (live, dead: stopped renewing and not swept yet), read at scrape time.",
		Labels: []string{"state"},
		Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
			counts := map[string]float64{queue.ProcessLive: 0, queue.ProcessDead: 0}
			// The pool's search path is the service's schema.
			rows, err := db.Query(ctx, `SELECT renewed_at + timeout < now(), count(*) FROM processes GROUP BY 1`)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			for rows.Next() {
				var dead bool
				var n float64
				if err := rows.Scan(&dead, &n); err != nil {
					return nil, err
				}
				state := queue.ProcessLive
				if dead {
					state = queue.ProcessDead
				}
				counts[state] = n
			}
			return []metrics.Sample{
				{Labels: []string{queue.ProcessLive}, Value: counts[queue.ProcessLive]},
				{Labels: []string{queue.ProcessDead}, Value: counts[queue.ProcessDead]},
			}, rows.Err()
		},
	}
}

// handleProcesses lists the service's processes: GET /v1/processes.
func (d *Deps) handleProcesses(c *echo.Context) error {
	list, err := queue.ListProcesses(c.Request().Context(), d.Pool, d.Service)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, web.Page[queue.ProcessInfo]{Items: list})
}
