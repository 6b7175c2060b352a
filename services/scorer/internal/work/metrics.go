package work

import (
	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/shared/metrics"
)

// Metrics counts the scorings of this process. The age of the latest weights is read from the
// database at scrape time (Gauges).
type Metrics struct {
	scorings *prometheus.CounterVec
}

// NewMetrics registers scorer's counters on reg, both outcomes at zero.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{scorings: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_scorer_batches_total",
		Help: "score_batch jobs this process finished, by outcome: scored, or failed (inputs that can never be scored).",
	}, []string{"outcome"})}
	m.scorings.WithLabelValues("scored")
	m.scorings.WithLabelValues("failed")
	reg.MustRegister(m.scorings)
	return m
}

func (m *Metrics) scored(outcome string) {
	if m != nil {
		m.scorings.WithLabelValues(outcome).Inc()
	}
}

// Gauges are scorer's gauges read at scrape time; batches is read newest first by its index on
// started_at.
var Gauges = []metrics.Gauge{{
	Name: "drover_scorer_latest_weights_age_seconds",
	Help: "Seconds since the batch whose weights are the latest was scored; absent before any weights.",
	SQL: `SELECT extract(epoch FROM now() - b.scored_at)::float8 FROM batches b
		WHERE b.scored_at IS NOT NULL AND EXISTS (SELECT FROM miner_scores m WHERE m.batch_id = b.id AND m.weight_u16 > 0)
		ORDER BY b.started_at DESC, b.id DESC LIMIT 1`,
}}
