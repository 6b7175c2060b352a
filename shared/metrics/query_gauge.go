package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/shared/postgres"
)

// queryTimeout bounds one gauge statement, so a slow database delays a scrape by at most this.
const queryTimeout = 2 * time.Second

// QueryGauge is a gauge family computed at scrape time by one query (a sqlc-generated statement
// behind Gauge.Read). The query is the whole cost of a scrape, so it must be bounded: an indexed
// lookup, a small table, or a LIMIT in a subquery.
type QueryGauge struct {
	desc   *prometheus.Desc
	db     postgres.DBTX
	read   func(context.Context, postgres.DBTX) ([]Sample, error)
	labels int
	failed prometheus.Counter
}

// Gauge describes a QueryGauge: its family name, help and labels, and Read, a function (a
// sqlc-generated query) returning the samples.
type Gauge struct {
	Name, Help string
	Labels     []string
	Read       func(ctx context.Context, db postgres.DBTX) ([]Sample, error)
}

// Sample is one series of a gauge family read by Gauge.Read: its label values in order and its
// value.
type Sample struct {
	Labels []string
	Value  float64
}

// NewQueryGauge returns the gauge family g, read from db. failures counts statements that
// failed; a failed statement leaves its family out of that scrape, and the rest is served.
func NewQueryGauge(db postgres.DBTX, failures *prometheus.CounterVec, g Gauge) *QueryGauge {
	return &QueryGauge{
		desc: prometheus.NewDesc(g.Name, g.Help, g.Labels, nil), db: db, read: g.Read,
		labels: len(g.Labels), failed: failures.WithLabelValues(g.Name),
	}
}

// NewQueryFailures returns the counter of failed gauge statements, labelled by gauge; register
// it once per registry.
func NewQueryFailures() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_metrics_query_failures_total",
		Help: "Gauge statements that failed at scrape time, by gauge; that gauge is missing from the scrape.",
	}, []string{"gauge"})
}

// Describe implements prometheus.Collector.
func (g *QueryGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *QueryGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	metrics, err := g.samples(ctx)
	if err != nil {
		g.failed.Inc()
		return
	}
	for _, m := range metrics {
		ch <- m
	}
}

// samples reads the family through the gauge's Read function.
func (g *QueryGauge) samples(ctx context.Context) ([]prometheus.Metric, error) {
	samples, err := g.read(ctx, g.db)
	if err != nil {
		return nil, err
	}
	out := make([]prometheus.Metric, 0, len(samples))
	for _, s := range samples {
		if len(s.Labels) != g.labels {
			return nil, fmt.Errorf("gauge %s: %d labels, want %d", g.desc, len(s.Labels), g.labels)
		}
		m, err := prometheus.NewConstMetric(g.desc, prometheus.GaugeValue, s.Value, s.Labels...)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Samples maps the rows of a gauge's query to its samples, passing the query's error through.
func Samples[R any](rows []R, err error, sample func(R) Sample) ([]Sample, error) {
	if err != nil {
		return nil, err
	}
	out := make([]Sample, len(rows))
	for i, r := range rows {
		out[i] = sample(r)
	}
	return out, nil
}

// One is the sample of a family without labels read by a query returning one row: none when
// the query found no row (the family is absent from that scrape), so a Read can be written
// return metrics.One(query(ctx, db)).
func One(v float64, err error) ([]Sample, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []Sample{{Value: v}}, nil
}

// Strings returns typed values (states, statuses) as the strings a query's text[] takes.
func Strings[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
