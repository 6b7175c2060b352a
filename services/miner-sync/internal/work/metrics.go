package work

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/services/miner-sync/internal/store"
	"drover.dev/shared/metrics"
	"drover.dev/shared/postgres"
)

// Metrics counts the syncs of this process by outcome. The gauges of the miners table and of the
// last sync are read from the database at scrape time (see Gauges), so they hold across restarts
// and replicas.
type Metrics struct {
	syncs *prometheus.CounterVec
}

// NewMetrics registers miner-sync's counters on reg, every outcome at zero.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_miner_sync_syncs_total",
		Help: "Metagraph syncs finished by this process, by outcome (ok, partial, failed).",
	}, []string{"outcome"})}
	for _, o := range []store.Outcome{store.OutcomeOK, store.OutcomePartial, store.OutcomeFailed} {
		m.syncs.WithLabelValues(string(o))
	}
	reg.MustRegister(m.syncs)
	return m
}

func (m *Metrics) synced(outcome store.Outcome) {
	if m != nil {
		m.syncs.WithLabelValues(string(outcome)).Inc()
	}
}

// Gauges are miner-sync's gauges read from its tables at scrape time. The miners table holds a
// subnet's UIDs and their history; sync_events is read through its index on at, newest first.
var Gauges = []metrics.Gauge{
	{
		Name: "drover_miner_sync_miners", Labels: []string{"state"},
		Help: "Miners in the miners table by state: serving, not_serving (no axon), validator, inactive (deregistered).",
		Read: minerGauge,
	},
	{
		Name: "drover_miner_sync_last_good_sync_age_seconds",
		Help: "Seconds since the last sync that applied a metagraph (ok or partial); absent before the first.",
		Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
			return metrics.One(store.LastGoodSyncAge(ctx, db))
		},
	},
	{
		Name: "drover_miner_sync_last_sync_block",
		Help: "Block of the metagraph the last sync that reached the source read.",
		Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
			return metrics.One(store.LastSyncBlock(ctx, db))
		},
	},
}

// minerGauge reads the miners gauge: one sample per miner state.
func minerGauge(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
	counts, err := store.MinerStateCounts(ctx, db)
	if err != nil {
		return nil, err
	}
	samples := make([]metrics.Sample, 0, len(counts))
	for _, s := range store.MinerStates() {
		samples = append(samples, metrics.Sample{Labels: []string{string(s)}, Value: counts[s]})
	}
	return samples, nil
}
