package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Pool exposes a pgx pool's state at scrape time (pgxpool.Stat): connections in use and idle,
// the pool's size, and the waits for a connection. River's listener is not among them: it
// hijacks its connection out of the pool, so a process holds these plus one.
type Pool struct {
	pool                                *pgxpool.Pool
	conns, max, acquires, waits, waited *prometheus.Desc
}

// NewPool returns the collector of pool's state; register it once per registry.
func NewPool(pool *pgxpool.Pool) *Pool {
	return &Pool{
		pool: pool,
		conns: prometheus.NewDesc("drover_db_pool_connections",
			"Connections of the process's Postgres pool, by state: in_use (acquired), idle, or constructing.", []string{"state"}, nil),
		max: prometheus.NewDesc("drover_db_pool_max_connections",
			"The largest size of the process's Postgres pool (DB_MAX_CONNS or the process's share of the budget).", nil, nil),
		acquires: prometheus.NewDesc("drover_db_pool_acquires_total",
			"Connections acquired from the pool.", nil, nil),
		waits: prometheus.NewDesc("drover_db_pool_empty_acquires_total",
			"Acquires that had to wait for a connection because the pool was empty.", nil, nil),
		waited: prometheus.NewDesc("drover_db_pool_acquire_wait_seconds_total",
			"Time acquires spent waiting for a connection.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (p *Pool) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.conns, p.max, p.acquires, p.waits, p.waited} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *Pool) Collect(ch chan<- prometheus.Metric) {
	s := p.pool.Stat()
	ch <- prometheus.MustNewConstMetric(p.conns, prometheus.GaugeValue, float64(s.AcquiredConns()), "in_use")
	ch <- prometheus.MustNewConstMetric(p.conns, prometheus.GaugeValue, float64(s.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(p.conns, prometheus.GaugeValue, float64(s.ConstructingConns()), "constructing")
	ch <- prometheus.MustNewConstMetric(p.max, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(p.acquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(p.waits, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(p.waited, prometheus.CounterValue, s.AcquireDuration().Seconds())
}
