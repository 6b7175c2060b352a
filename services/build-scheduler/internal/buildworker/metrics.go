package buildworker

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/outcomes"
)

// buildBuckets span a build: from an instant job to the longest timeout a job may have.
var buildBuckets = []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600, 7200}

// Metrics is what a build-worker process did: how long ready jobs waited for it, its builds by
// target and outcome with their durations, and (under the scheduler's names, see package
// outcomes) the jobs finished and groups settled by the reports it applied.
type Metrics struct {
	*outcomes.Counters
	dispatch *prometheus.HistogramVec
	builds   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	stages   *prometheus.HistogramVec
}

// stageBuckets resolve the stages of an instant build, a tenth of a millisecond and up, as well
// as a slow one.
var stageBuckets = []float64{
	0.00005, 0.0001, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008,
	0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 5, 60, 3600,
}

// NewMetrics registers the build-worker's metrics on reg, every target's outcomes at zero;
// logger receives the line per job failed and group settled.
func NewMetrics(reg prometheus.Registerer, targets []string, logger *slog.Logger) *Metrics {
	m := &Metrics{
		Counters: outcomes.New(reg, logger),
		dispatch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "drover_build_worker_dispatch_seconds",
			Help:    "Time from a build becoming ready (its River job inserted) to River's fetch starting it on this worker, by target.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900},
		}, []string{"target"}),
		builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_build_worker_builds_total",
			Help: "Build attempts this worker ran, by target and outcome (succeeded, failed, cancelled).",
		}, []string{"target", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_build_worker_build_duration_seconds", Buckets: buildBuckets,
			Help: "Run time of build attempts, by target.",
		}, []string{"target"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_build_worker_stage_seconds", Buckets: stageBuckets,
			Help: "Time a build's work spends in each stage, from River's fetch to the report's commit (workdir, start, run, reap, log_flush, report, commit; total is their sum; slot_idle, outside it, is a slot's wait from the end of its previous build's work to the start of this one's).",
		}, []string{"stage"}),
	}
	for _, s := range Stages {
		m.stages.WithLabelValues(s)
	}
	for _, t := range targets {
		for _, o := range []queue.BuildOutcome{queue.BuildSucceeded, queue.BuildFailed, queue.BuildCancelled} {
			m.builds.WithLabelValues(t, string(o))
		}
	}
	reg.MustRegister(m.dispatch, m.builds, m.duration, m.stages)
	return m
}

// started observes a build's dispatch time: from its River job's insert to River starting it.
func (m *Metrics) started(target string, inserted, fetched time.Time) {
	if m != nil {
		m.dispatch.WithLabelValues(target).Observe(fetched.Sub(inserted).Seconds())
	}
}

// built counts a build this worker ran, by outcome, and its run time.
func (m *Metrics) built(target string, outcome queue.BuildOutcome, took time.Duration) {
	if m != nil {
		m.builds.WithLabelValues(target, string(outcome)).Inc()
		m.duration.WithLabelValues(target).Observe(took.Seconds())
	}
}

// reported counts and logs a report this worker applied.
func (m *Metrics) reported(r jobgraph.Report, res jobgraph.Result) {
	if m != nil {
		m.Reported(r, res)
	}
}

// stage observes one stage of a build's work.
func (m *Metrics) stage(name string, took time.Duration) {
	m.stages.WithLabelValues(name).Observe(took.Seconds())
}
