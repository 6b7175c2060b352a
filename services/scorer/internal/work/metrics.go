package work

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/metrics"
	"drover.dev/shared/postgres"
)

// Metrics counts the scorings and weight submissions of this process. The age of the latest
// weights, and of the last weights sent, are read from the database at scrape time (Gauges).
type Metrics struct {
	scorings    *prometheus.CounterVec
	submissions *prometheus.CounterVec
}

// NewMetrics registers scorer's counters on reg, both outcomes at zero.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{scorings: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_scorer_batches_total",
		Help: "score_batch jobs this process finished, by outcome: scored, or failed (inputs that can never be scored).",
	}, []string{"outcome"})}
	m.scorings.WithLabelValues("scored")
	m.scorings.WithLabelValues("failed")
	m.submissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_scorer_weight_submissions_total",
		Help: "Attempts of this process to set the weights (through Pylon or directly), by outcome: sent, failed, skipped, or refused (commit-reveal on and no Pylon).",
	}, []string{"outcome"})
	for _, o := range store.SubmissionOutcomes {
		m.submissions.WithLabelValues(o)
	}
	reg.MustRegister(m.scorings, m.submissions)
	return m
}

func (m *Metrics) submitted(outcome string) {
	if m != nil {
		m.submissions.WithLabelValues(outcome).Inc()
	}
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
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		return metrics.One(store.LatestWeightsAge(ctx, db))
	},
}, {
	Name: "drover_scorer_weights_sent_age_seconds",
	Help: "Seconds since the weights were last sent (Pylon accepted them, or the node took the extrinsic); absent before they ever were.",
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		return metrics.One(store.WeightsSentAge(ctx, db))
	},
}}
