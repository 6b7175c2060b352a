package work

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/shared/metrics"
	"drover.dev/shared/postgres"
)

// stageBuckets span a stage's life: a hot phase of milliseconds to a spin-up of minutes.
var stageBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600}

// Metrics is batch-runner's view of its batches: outcomes, stage durations, executors by outcome
// and class, and the send and arrival spreads of the last batch this process ran. What must hold
// across restarts (the age of the last batch) is read from the database at scrape time (Gauges).
type Metrics struct {
	batches *prometheus.CounterVec
	stages  *prometheus.HistogramVec
	jobs    *prometheus.CounterVec
	send    prometheus.Gauge
	arrival prometheus.Gauge
	cycle   prometheus.Gauge
	// takeovers counts the batches and shards this process's sweeper took over.
	takeovers *prometheus.CounterVec
}

// NewMetrics registers batch-runner's metrics on reg. cycle is the periodic batch's interval,
// exposed so that an alert can compare the last batch's age with it.
func NewMetrics(reg prometheus.Registerer, cycle time.Duration) *Metrics {
	m := &Metrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_batch_runner_batches_total",
			Help: "Batch attempts (or sharded batches) this process ended, by outcome (done, failed).",
		}, []string{"outcome"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_batch_runner_stage_duration_seconds", Buckets: stageBuckets,
			Help: "Duration of each stage of phase 2 (manifests, generate, availability, hot, receipts).",
		}, []string{"stage"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_batch_runner_executors_total",
			Help: "Executors tested, by outcome (completed, excused, failed) and executor class.",
		}, []string{"outcome", "class"}),
		send: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_batch_runner_last_batch_send_spread_seconds",
			Help: "Send spread of the last batch or shard this process ran: latest after-send minus earliest before-send.",
		}),
		arrival: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_batch_runner_last_batch_arrival_spread_seconds",
			Help: "Arrival spread of the last batch or shard this process ran: latest minus earliest instant a job request was wholly handed to the network, the earliest it can arrive.",
		}),
		cycle: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_batch_runner_cycle_seconds",
			Help: "The configured interval between periodic batches.",
		}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_batch_runner_lease_takeovers_total",
			Help: "Batches (of=batch) and shards (of=shard) whose lease ran out, handed by this process's sweeper to a new job: a process died, or lost the database, while running them.",
		}, []string{"of"}),
	}
	m.takeovers.WithLabelValues("batch")
	m.takeovers.WithLabelValues("shard")
	for _, o := range []store.BatchState{store.BatchDone, store.BatchFailed} {
		m.batches.WithLabelValues(string(o))
	}
	m.cycle.Set(cycle.Seconds())
	reg.MustRegister(m.batches, m.stages, m.jobs, m.send, m.arrival, m.cycle, m.takeovers)
	return m
}

// ran records a batch attempt's (or a shard's) stages, executors and spreads, and logs a line
// per stage.
func (m *Metrics) ran(ctx context.Context, logger *slog.Logger, batchID int64, res *batch.Result) {
	for _, s := range res.Stages {
		d := s.FinishedAt.Sub(s.StartedAt)
		logger.InfoContext(ctx, "batch stage", "batch_id", batchID, "stage", s.Name, "duration", d, "counts", s.Counts)
		if m != nil {
			m.stages.WithLabelValues(s.Name).Observe(d.Seconds())
		}
	}
	if m == nil || len(res.Jobs) == 0 {
		return
	}
	var first, last time.Time
	for _, j := range res.Jobs {
		m.jobs.WithLabelValues(string(j.Outcome), j.Class).Inc()
		if j.AfterSend.IsZero() {
			continue
		}
		if first.IsZero() || j.AfterSend.Before(first) {
			first = j.AfterSend
		}
		if j.AfterSend.After(last) {
			last = j.AfterSend
		}
	}
	m.send.Set(res.SendSpread.Seconds())
	m.arrival.Set(last.Sub(first).Seconds())
}

// ended counts a batch that ended with outcome (done or failed); "" (a shard whose batch goes
// on) counts nothing.
func (m *Metrics) ended(outcome store.BatchState) {
	if m != nil && outcome != "" {
		m.batches.WithLabelValues(string(outcome)).Inc()
	}
}

// tookOver counts a takeover of a batch, or of a shard.
func (m *Metrics) tookOver(shard bool) {
	if m == nil {
		return
	}
	of := "batch"
	if shard {
		of = "shard"
	}
	m.takeovers.WithLabelValues(of).Inc()
}

// Gauges are batch-runner's gauges read at scrape time, by primary key, newest first.
var Gauges = []metrics.Gauge{{
	Name: "drover_batch_runner_last_batch_age_seconds",
	Help: "Seconds since the latest batch started, whatever its state; absent before the first batch.",
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		return metrics.One(store.LatestBatchAge(ctx, db))
	},
}, {
	Name: "drover_batch_runner_last_batch_failed",
	Help: "1 when the latest finished batch failed, 0 when it was done; absent before the first.",
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		return metrics.One(store.LatestBatchFailed(ctx, db))
	},
}}
