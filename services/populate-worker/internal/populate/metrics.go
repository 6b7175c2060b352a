package populate

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// makeBuckets span a make: a quick Go make to an HTTP function that takes minutes.
var makeBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900}

// Metrics counts what an engine did, by table: makes and their durations, make errors,
// reservations reclaimed from dead workers, and schedule and cleanup runs. The jobs by table and
// status are read from the database at scrape time (JobGauges). A nil *Metrics counts nothing.
type Metrics struct {
	makes     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	reclaimed *prometheus.CounterVec
	runs      *prometheus.CounterVec
	keys      *prometheus.CounterVec
	logger    *slog.Logger
}

// NewMetrics registers the engine's metrics on reg, with every table's series at zero; logger
// receives the line per unit of work (a make error, a cleanup, a schedule that found keys).
func NewMetrics(reg prometheus.Registerer, logger *slog.Logger, tables []string) *Metrics {
	m := &Metrics{
		makes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_populate_worker_makes_total",
			Help: "Makes run, by table and outcome (success, error).",
		}, []string{"table", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_populate_worker_make_duration_seconds", Buckets: makeBuckets,
			Help: "Duration of makes, from reservation to commit, by table.",
		}, []string{"table"}),
		reclaimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_populate_worker_reservations_reclaimed_total",
			Help: "Reservations of dead or stalled workers returned to scheduled, by table.",
		}, []string{"table"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_populate_worker_runs_total",
			Help: "schedule_jobs and cleanup_jobs runs, by table, kind (schedule, cleanup) and whether min_scheduling_interval suppressed them.",
		}, []string{"table", "kind", "suppressed"}),
		keys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_populate_worker_keys_total",
			Help: "Keys scheduled by schedule_jobs (schedule), jobs removed by cleanup_jobs (cleanup) and makes of scheduled keys enqueued by the feeder (feed), by table and kind.",
		}, []string{"table", "kind"}),
		logger: logger,
	}
	for _, t := range tables {
		m.makes.WithLabelValues(t, "success")
		m.makes.WithLabelValues(t, "error")
		m.reclaimed.WithLabelValues(t)
		for _, kind := range []string{"schedule", "cleanup"} {
			m.runs.WithLabelValues(t, kind, "false")
			m.keys.WithLabelValues(t, kind)
		}
		m.keys.WithLabelValues(t, "feed")
	}
	reg.MustRegister(m.makes, m.duration, m.reclaimed, m.runs, m.keys)
	return m
}

// made counts a make of table's key that took d and ended in makeErr (nil: success).
func (m *Metrics) made(ctx context.Context, table, hash string, d time.Duration, makeErr error) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(table).Observe(d.Seconds())
	if makeErr == nil {
		m.makes.WithLabelValues(table, "success").Inc()
		return
	}
	m.makes.WithLabelValues(table, "error").Inc()
	msg, _ := describe(makeErr)
	m.logger.InfoContext(ctx, "make error", "table", table, "key_hash", hash, "error", msg, "duration", d)
}

// ran counts a schedule or cleanup run of table that touched n keys.
func (m *Metrics) ran(table, kind string, suppressed bool, n int) {
	if m == nil {
		return
	}
	s := "false"
	if suppressed {
		s = "true"
	}
	m.runs.WithLabelValues(table, kind, s).Inc()
	m.keys.WithLabelValues(table, kind).Add(float64(n))
	if !suppressed && (kind == "cleanup" || n > 0) {
		m.logger.Info(kind+" jobs", "table", table, "keys", n)
	}
}

// info logs one line at info level.
func (m *Metrics) info(msg string, attrs ...any) {
	if m != nil {
		m.logger.Info(msg, attrs...)
	}
}

// warn logs one line at warn level.
func (m *Metrics) warn(msg string, attrs ...any) {
	if m != nil {
		m.logger.Warn(msg, attrs...)
	}
}

// fed counts n makes of table's scheduled keys enqueued by the feeder.
func (m *Metrics) fed(table string, n int) {
	if m != nil {
		m.keys.WithLabelValues(table, "feed").Add(float64(n))
	}
}

// reclaimedFrom counts n reservations of table reclaimed.
func (m *Metrics) reclaimedFrom(table string, n int) {
	if m != nil {
		m.reclaimed.WithLabelValues(table).Add(float64(n))
	}
}
