package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/shared/metrics/dbsqlc"
	"drover.dev/shared/postgres"
)

// RiverEvents are the River events River consumes: one per finished attempt.
var RiverEvents = []river.EventKind{
	river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed,
}

// riverOutcomes maps River's event kinds to the outcome label.
var riverOutcomes = map[river.EventKind]string{
	river.EventKindJobCompleted: "completed", river.EventKindJobFailed: "failed",
	river.EventKindJobCancelled: "cancelled", river.EventKindJobSnoozed: "snoozed",
}

// riverJobsLimit bounds the index entries the jobs gauge reads per queue and state: past it the
// counts saturate, which a backlog alert still sees, and a scrape never scans a huge table.
// Measured on 450,000 available jobs in two queues, in the worst case for the index (rows never
// vacuumed, so every entry is checked in the heap): 250 ms along the index at 10,000, 3.5 s at
// 100,000; without the ORDER BY, Postgres scanned the table once per state (1.6 s at 10,000).
const riverJobsLimit = 10000

// riverUnfinished are the states of the jobs the jobs gauge counts.
var riverUnfinished = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// queries are the gauges' statements, compiled by sqlc from query.sql.
var queries = dbsqlc.New()

// River is the metrics of one River client's work: the jobs of its schema by queue and state
// read at scrape time, and from the client's own events the wait from available to started, the
// run time and the outcome of every attempt it works.
type River struct {
	wait, run *prometheus.HistogramVec
	finished  *prometheus.CounterVec
	errors    *prometheus.CounterVec
	perKind   []*prometheus.CounterVec // counted elsewhere by kind; at zero from a kind's first attempt
}

// ZeroPerKind starts each of vecs, counters labelled by kind alone that something else counts
// (the jobs liveness sweeps gave back), at zero for every kind from its first attempt here, so
// that rate() and increase() see the series before its first count.
func (r *River) ZeroPerKind(vecs ...*prometheus.CounterVec) { r.perKind = append(r.perKind, vecs...) }

// NewRiver registers on reg the River metrics of the schema db's search path points at.
func NewRiver(reg prometheus.Registerer, db postgres.DBTX, failures *prometheus.CounterVec) *River {
	buckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900}
	r := &River{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_river_job_wait_seconds", Buckets: buckets,
			Help: "Time River jobs waited from available to started, by queue and kind.",
		}, []string{"queue", "kind"}),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_river_job_run_seconds", Buckets: buckets,
			Help: "Time River jobs ran, per attempt, by queue and kind.",
		}, []string{"queue", "kind"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_river_job_attempts_total",
			Help: "River job attempts this process finished, by queue, kind and outcome (completed, failed, cancelled, snoozed).",
		}, []string{"queue", "kind", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_river_job_errors_total",
			Help: "River job attempts that ended with an error (failed or cancelled), by queue and kind.",
		}, []string{"queue", "kind"}),
	}
	reg.MustRegister(r.wait, r.run, r.finished, r.errors, riverJobs(db, failures), riverOldest(db, failures))
	return r
}

// riverJobs counts each queue's unfinished jobs by state, each count a range of River's fetching
// index on (state, queue, priority, scheduled_at, id) capped at riverJobsLimit: the ORDER BY on
// the index's columns is what makes Postgres walk the index instead of scanning the table for
// every state. Queues come from river_queue, so a queue with nothing waiting reports zeros.
func riverJobs(db postgres.DBTX, failures *prometheus.CounterVec) *QueryGauge {
	return NewQueryGauge(db, failures, Gauge{
		Name:   "drover_river_jobs",
		Help:   "River jobs not yet finished, by queue and state, read at scrape time (saturates at 10000 per queue and state).",
		Labels: []string{"queue", "state"},
		Read: func(ctx context.Context, db postgres.DBTX) ([]Sample, error) {
			rows, err := queries.RiverJobCountList(ctx, db, dbsqlc.RiverJobCountListParams{
				MaxJobs: riverJobsLimit, States: Strings(riverUnfinished),
			})
			return Samples(rows, err, func(r dbsqlc.RiverJobCountListRow) Sample {
				return Sample{Labels: []string{r.Queue, r.State}, Value: r.Jobs}
			})
		},
	})
}

// riverOldest is the age of the job River would hand out next in each queue (the highest
// priority, then the earliest scheduled): one index lookup per queue.
func riverOldest(db postgres.DBTX, failures *prometheus.CounterVec) *QueryGauge {
	return NewQueryGauge(db, failures, Gauge{
		Name:   "drover_river_oldest_available_seconds",
		Help:   "How long the job River would hand out next in each queue has been available; 0 when none waits.",
		Labels: []string{"queue"},
		Read: func(ctx context.Context, db postgres.DBTX) ([]Sample, error) {
			rows, err := queries.RiverOldestAgeList(ctx, db, string(rivertype.JobStateAvailable))
			return Samples(rows, err, func(r dbsqlc.RiverOldestAgeListRow) Sample {
				return Sample{Labels: []string{r.Queue}, Value: r.Age}
			})
		},
	})
}

// Observe records one finished attempt.
func (r *River) Observe(ev *river.Event) {
	outcome, ok := riverOutcomes[ev.Kind]
	if !ok || ev.Job == nil {
		return
	}
	q, kind := ev.Job.Queue, ev.Job.Kind
	r.finished.WithLabelValues(q, kind, outcome).Inc()
	errs := r.errors.WithLabelValues(q, kind) // at zero from the kind's first attempt, for rate()
	for _, vec := range r.perKind {
		vec.WithLabelValues(kind)
	}
	if outcome == "failed" || outcome == "cancelled" {
		errs.Inc()
	}
	if ev.JobStats != nil {
		r.wait.WithLabelValues(q, kind).Observe(ev.JobStats.QueueWaitDuration.Seconds())
		r.run.WithLabelValues(q, kind).Observe(ev.JobStats.RunDuration.Seconds())
	}
}

// Consume observes events until ctx ends or the subscription closes.
func (r *River) Consume(ctx context.Context, events <-chan *river.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			r.Observe(ev)
		}
	}
}
