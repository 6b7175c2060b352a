package work

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/outcomes"
	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/metrics"
	"drover.dev/shared/postgres"
)

// Metrics counts what the scheduler's workers and reaper did. The jobs and groups by state are
// read from the database at scrape time (Gauges). A nil *Metrics counts nothing, for the
// build-worker process, which registers these workers without working their queue (it counts
// the reports it applies itself with its own outcomes.Counters).
type Metrics struct {
	*outcomes.Counters
	watchdog *prometheus.CounterVec
	adopted  *prometheus.CounterVec
	logger   *slog.Logger
}

// NewMetrics registers the scheduler's counters on reg; logger receives the line per unit of
// work (a job failed, a group settled, a watchdog action, an orphan adopted).
func NewMetrics(reg prometheus.Registerer, logger *slog.Logger) *Metrics {
	m := &Metrics{
		Counters: outcomes.New(reg, logger),
		watchdog: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_build_scheduler_watchdog_actions_total",
			Help: "Watchdog actions, by action: cancel (a stalled group), settle (a group left open), drift (counters repaired).",
		}, []string{"action"}),
		adopted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_build_scheduler_orphans_total",
			Help: "Builds the reaper found waiting on a River job no longer there to run them, by what it did: replaced (the River job ended without a report: a new attempt, or failed at the last), cancelled (the River job was cancelled or deleted in River UI before it ran), dispatched (a pending job from before an upgrade got its River job).",
		}, []string{"action"}),
		logger: logger,
	}
	for _, a := range []string{"cancel", "settle", "drift"} {
		m.watchdog.WithLabelValues(a)
	}
	for _, a := range []string{orphanReplaced, orphanCancelled, orphanDispatched} {
		m.adopted.WithLabelValues(a)
	}
	reg.MustRegister(m.watchdog, m.adopted)
	return m
}

// The reaper's actions on an orphan, as drover_build_scheduler_orphans_total counts them.
const (
	orphanReplaced   = "replaced"
	orphanCancelled  = "cancelled"
	orphanDispatched = "dispatched"
)

// adoptedOrphan counts and logs what the reaper did with an orphan.
func (m *Metrics) adoptedOrphan(o jobgraph.Orphan, res jobgraph.Result, did string) {
	if m == nil || !res.Applied {
		return
	}
	action := orphanReplaced
	switch {
	case o.State == jobgraph.Pending:
		action = orphanDispatched
	case res.State == jobgraph.CancelComplete && o.State != jobgraph.CancelPending:
		action = orphanCancelled
	}
	m.adopted.WithLabelValues(action).Inc()
	m.logger.Warn("reaper: "+did, "job_id", o.JobID, "attempt", o.Attempt, "group_id", res.GroupID, "job_state", res.State)
	m.Finished(res.State)
	m.GroupSettled(res, "reaper")
}

// watched counts and logs what a watchdog pass did.
func (m *Metrics) watched(rep jobgraph.WatchReport) {
	if m == nil {
		return
	}
	m.watchdog.WithLabelValues("cancel").Add(float64(len(rep.Canceled)))
	m.watchdog.WithLabelValues("settle").Add(float64(len(rep.Settled)))
	m.watchdog.WithLabelValues("drift").Add(float64(len(rep.Drift)))
	if n := len(rep.Canceled) + len(rep.Settled) + len(rep.Drift); n > 0 {
		m.logger.Info("watchdog acted", "cancelled_groups", rep.Canceled, "settled_groups", rep.Settled, "drifted_groups", len(rep.Drift))
	}
}

// Gauges are the scheduler's gauges read at scrape time (package store). Jobs are counted in open
// groups only, through the groups' state index and the jobs' group index, so the cost follows the
// work in flight rather than the history; groups are one row per submission.
var Gauges = []metrics.Gauge{{
	Name: "drover_build_scheduler_jobs", Labels: []string{"state", "target"},
	Help: "Jobs of open (queued or dispatching) groups, by state and target; targets with a worker report zeros.",
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		rows, err := queries.JobCountOpen(ctx, db, dbsqlc.JobCountOpenParams{
			JobStates:  metrics.Strings(jobgraph.JobStates()),
			OpenStates: metrics.Strings([]jobgraph.GroupState{jobgraph.GroupQueued, jobgraph.GroupDispatching}),
		})
		return metrics.Samples(rows, err, func(r dbsqlc.JobCountOpenRow) metrics.Sample {
			return metrics.Sample{Labels: []string{r.State, r.Target}, Value: r.Jobs}
		})
	},
}, {
	Name: "drover_build_scheduler_groups", Labels: []string{"state"},
	Help: "Groups by state.",
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		rows, err := queries.GroupCountByState(ctx, db, metrics.Strings(jobgraph.GroupStates()))
		return metrics.Samples(rows, err, func(r dbsqlc.GroupCountByStateRow) metrics.Sample {
			return metrics.Sample{Labels: []string{r.State}, Value: r.Groups}
		})
	},
}, {
	Name: "drover_build_scheduler_oldest_ready_seconds", Labels: []string{"target"},
	Help: "How long the oldest ready job of each target served by a worker has waited for one; 0 when none waits.",
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		rows, err := queries.ReadyJobOldestAge(ctx, db)
		return metrics.Samples(rows, err, func(r dbsqlc.ReadyJobOldestAgeRow) metrics.Sample {
			return metrics.Sample{Labels: []string{r.Target}, Value: r.Seconds}
		})
	},
}, {
	Name: "drover_build_scheduler_workers", Labels: []string{"target"},
	Help: "Build workers that polled each target within the last two minutes.",
	Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
		rows, err := queries.WorkerCountRecent(ctx, db)
		return metrics.Samples(rows, err, func(r dbsqlc.WorkerCountRecentRow) metrics.Sample {
			return metrics.Sample{Labels: []string{r.Target}, Value: r.Workers}
		})
	},
}}

// queries are the gauges' sqlc-generated queries.
var queries = dbsqlc.New()
