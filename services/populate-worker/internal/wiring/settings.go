package wiring

import (
	"fmt"
	"time"

	"drover.dev/queue"
)

// Settings are the populate-worker's settings of what makes keys, read from POPULATE_WORKER_*
// environment variables as part of the service's Config, which embeds them.
type Settings struct {
	MinSchedulingInterval time.Duration `envconfig:"MIN_SCHEDULING_INTERVAL" default:"5s" desc:"schedule_jobs of a table runs at most once per interval (database clock); 0 schedules whatever the last event, as DataJoint's min_scheduling_interval=0"`
	OrphanTimeout         time.Duration `envconfig:"ORPHAN_TIMEOUT" default:"2m" desc:"reservation lease: a reserved job not renewed for this long is scheduled again"`
	ReclaimEvery          time.Duration `envconfig:"RECLAIM_EVERY" default:"10s" desc:"how often dead or expired reservations are looked for"`
	ListenFlushEvery      time.Duration `envconfig:"LISTEN_FLUSH_EVERY" default:"200ms" desc:"how long upstream change notifications gather before their schedule jobs are enqueued"`
	FeedAhead             int           `envconfig:"FEED_AHEAD" default:"5000" desc:"populate_make jobs of a table the feeder keeps waiting in River; it enqueues the rest of the scheduled keys' makes as these drain"`
	FeedEvery             time.Duration `envconfig:"FEED_EVERY" default:"500ms" desc:"how soon a feeder that reached FEED_AHEAD looks again"`
	KeepSuccess           bool          `envconfig:"KEEP_SUCCESS" default:"false" desc:"keep completed jobs as status success with run_duration instead of deleting them"`
	MakeWorkers           int           `envconfig:"MAKE_WORKERS" default:"11" desc:"concurrent makes on this replica (queue populate): a populate run's makes go before the background makes of scheduled keys (River priority); MAKE_WORKERS + 3 must fit DB_MAX_CONNS (check-config says so): a make holds a connection and takes a second to finish"`
	RescheduleGrace       time.Duration `envconfig:"RESCHEDULE_GRACE" default:"10s" desc:"how long the background make of a rescheduled key waits (a scheduled River job) before it runs, so that a populate run started meanwhile makes the key and shows its outcome; 0 makes it at once"`
	FeedOff               bool          `envconfig:"FEED_OFF" default:"false" desc:"this replica does not work the feeder's queue (populate_feed), so the background makes of scheduled keys are not enqueued here; with it on every replica only populate runs, reschedules and reclaims enqueue makes"`
	RunWatchEvery         time.Duration `envconfig:"RUN_WATCH_EVERY" default:"250ms" desc:"how often running makes of populate runs look whether their run was cancelled"`
	MakeTimeout           time.Duration `envconfig:"MAKE_TIMEOUT" default:"1h" desc:"longest a single make may run; River rescues a make job of a dead replica within MAKE_TIMEOUT + 45 s"`
	MaintenanceTimeout    time.Duration `envconfig:"MAINTENANCE_TIMEOUT" default:"10m" desc:"longest a populate_schedule or populate_cleanup job may run (schedule_jobs or cleanup_jobs of every table it names); River rescues one of a dead replica within MAINTENANCE_TIMEOUT + 30 s"`
	FeedTimeout           time.Duration `envconfig:"FEED_TIMEOUT" default:"1m" desc:"longest one pass of the feeder (a populate_feed job) may run; River rescues one of a dead replica within FEED_TIMEOUT + 30 s"`
	ScheduleEvery         time.Duration `envconfig:"SCHEDULE_EVERY" default:"1m" desc:"periodic schedule_jobs of every table, besides the event-driven one"`
	CleanupEvery          time.Duration `envconfig:"CLEANUP_EVERY" default:"24h" desc:"periodic cleanup_jobs of every table, besides the event-driven one"`
}

// PoolHeadroom is what the pool needs beyond a connection per make: every make (MAKE_WORKERS of
// them at once) holds its reserving connection while it runs and takes a second for its
// finishing transaction, and the change listener and the process's liveness (its renewals and
// sweeps, queue.Process) hold one each for good. With less, every make could hold its first and
// wait for its second for good; with it, one always gets its second, finishes and gives both
// back. River's own statements take a connection only for a moment.
const PoolHeadroom = 3

// PoolNeeded is the fewest pool connections the settings' makes can run with: one a make and
// PoolHeadroom. check-config refuses a smaller DB_MAX_CONNS.
func (s Settings) PoolNeeded() int { return s.MakeWorkers + PoolHeadroom }

// Queues are the River queues the settings work: maintenance always, the feeder's unless
// FEED_OFF, the makes' with MAKE_WORKERS workers unless none.
func (s Settings) Queues() map[string]int {
	queues := map[string]int{queue.QueuePopulateMaintenance: 1}
	if !s.FeedOff {
		queues[queue.QueuePopulateFeed] = 1
	}
	if s.MakeWorkers > 0 {
		queues[queue.QueuePopulate] = s.MakeWorkers
	}
	return queues
}

// RescueAfter is River's RescueStuckJobsAfter and JobTimeout: the shortest timeout of any kind
// the service works (a make's is MAKE_TIMEOUT and its recording grace; a kind without its own,
// the probe, gets JobTimeout, at most River's default minute). River's rescuer, every 30 s, takes
// back a job that has run longer than both RescueStuckJobsAfter and its kind's timeout; with
// RescueStuckJobsAfter no longer than any kind's timeout, a dead replica's job of every kind is
// back within its own timeout plus 30 s.
func (s Settings) RescueAfter() time.Duration {
	return min(s.MakeTimeout, s.MaintenanceTimeout, s.FeedTimeout, time.Minute)
}

// Check lists every problem of the settings, each naming its variable.
func (s Settings) Check() []error {
	var errs []error
	if s.MakeWorkers < 0 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_MAKE_WORKERS: %d, want 0 or more", s.MakeWorkers))
	}
	if s.FeedAhead < 1 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_FEED_AHEAD: %d, want 1 or more", s.FeedAhead))
	}
	if s.RescheduleGrace < 0 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_RESCHEDULE_GRACE: %s, want 0 (make a rescheduled key at once) or more", s.RescheduleGrace))
	}
	if s.MinSchedulingInterval < 0 {
		errs = append(errs, fmt.Errorf("POPULATE_WORKER_MIN_SCHEDULING_INTERVAL: %s, want 0 (schedule whatever the last event) or more", s.MinSchedulingInterval))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ORPHAN_TIMEOUT", s.OrphanTimeout}, {"RECLAIM_EVERY", s.ReclaimEvery}, {"LISTEN_FLUSH_EVERY", s.ListenFlushEvery},
		{"FEED_EVERY", s.FeedEvery}, {"RUN_WATCH_EVERY", s.RunWatchEvery}, {"MAKE_TIMEOUT", s.MakeTimeout},
		{"MAINTENANCE_TIMEOUT", s.MaintenanceTimeout}, {"FEED_TIMEOUT", s.FeedTimeout},
		{"SCHEDULE_EVERY", s.ScheduleEvery}, {"CLEANUP_EVERY", s.CleanupEvery},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("POPULATE_WORKER_%s: %s, want more than zero", d.name, d.v))
		}
	}
	return errs
}
