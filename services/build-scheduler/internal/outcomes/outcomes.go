// Package outcomes counts and logs the final states build jobs and groups reach, in whichever
// process applies the transition: a build-worker applying its own report, or the scheduler's
// reaper settling a build whose River job ended without one. The
// counters keep the scheduler's names in every process, so a sum over the scraped processes is
// the service's figure.
package outcomes

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// Counters counts jobs finished and groups settled. A nil *Counters counts nothing.
type Counters struct {
	finished *prometheus.CounterVec
	settled  *prometheus.CounterVec
	logger   *slog.Logger
}

// New registers the counters on reg, every final state at zero; logger receives the line per
// job failed and group settled.
func New(reg prometheus.Registerer, logger *slog.Logger) *Counters {
	c := &Counters{
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_build_scheduler_jobs_finished_total",
			Help: "Build jobs that reached a final state through a report or a lost attempt, by state.",
		}, []string{"state"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_build_scheduler_groups_settled_total",
			Help: "Groups settled by a report or by the watchdog, by final state.",
		}, []string{"state"}),
		logger: logger,
	}
	for _, s := range []jobgraph.JobState{jobgraph.Complete, jobgraph.JobFailed, jobgraph.CancelComplete} {
		c.finished.WithLabelValues(string(s))
	}
	for _, s := range []jobgraph.GroupState{jobgraph.GroupComplete, jobgraph.GroupFailed, jobgraph.GroupCanceled} {
		c.settled.WithLabelValues(string(s))
	}
	reg.MustRegister(c.finished, c.settled)
	return c
}

// Reported counts and logs an applied report: the job's final state, and its group when the
// report settled it.
func (c *Counters) Reported(r jobgraph.Report, res jobgraph.Result) {
	if c == nil || !res.Applied {
		return
	}
	c.finished.WithLabelValues(string(res.State)).Inc()
	if res.State == jobgraph.JobFailed {
		c.logger.Info("build job failed", "job_id", r.JobID, "group_id", res.GroupID, "attempt", r.Attempt,
			"exit_code", r.ExitCode, "error", r.Error)
	}
	c.GroupSettled(res, "report")
}

// Finished counts a job that reached final state s by other means than a report.
func (c *Counters) Finished(s jobgraph.JobState) {
	if c != nil && jobgraph.IsFinal(s) {
		c.finished.WithLabelValues(string(s)).Inc()
	}
}

// GroupSettled counts and logs the group of res when the transition settled it; by names what
// settled it.
func (c *Counters) GroupSettled(res jobgraph.Result, by string) {
	if c == nil {
		return
	}
	switch res.GroupState {
	case jobgraph.GroupComplete, jobgraph.GroupFailed, jobgraph.GroupCanceled:
		c.settled.WithLabelValues(string(res.GroupState)).Inc()
		c.logger.Info("group settled", "group_id", res.GroupID, "state", res.GroupState, "by", by)
	}
}
