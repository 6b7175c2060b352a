package queue

import (
	"time"

	"github.com/riverqueue/river"
)

// Queues of the populate-worker. Makes and maintenance travel apart so that a million scheduled
// makes never delay the schedule and cleanup jobs that keep the jobs table fresh.
const (
	QueuePopulate            = "populate"
	QueuePopulateMaintenance = "populate_maintenance"
	// QueuePopulateFeed carries the populate-worker's own feed jobs, which enqueue the makes of
	// scheduled keys a chunk at a time; a queue of their own, so that a long schedule or cleanup
	// never holds back the feeding of makes.
	QueuePopulateFeed = "populate_feed"
)

// PopulateMakeArgs asks the populate-worker to run make() for one scheduled key of a computed
// table, for the background (the feeder, a reschedule, a reclaim) or, with RunID, for a populate
// run. The jobs table row (Table, KeyHash) is the source of truth: a job whose key is no longer
// scheduled makes nothing and ends cancelled saying why, so a duplicate delivery is harmless; a
// job retried in River UI after its make failed makes the key again. A run's make enqueues the
// run's next key in its finishing transaction, so that at most the run's processes makes are
// queued or running at a time, in the run's order; a run that was cancelled or stopped has the
// job complete without making its key.
type PopulateMakeArgs struct {
	// Table is the computed table's registered name.
	Table string `json:"table"`

	// KeyHash identifies the key within Table, as in the jobs table.
	KeyHash string `json:"key_hash"`

	// RunID is the populate run (populate_runs.id) that asked for the make; absent for the
	// background's makes.
	RunID int64 `json:"run_id,omitempty"`
}

// Kind is the job kind of PopulateMakeArgs.
func (PopulateMakeArgs) Kind() string { return "populate_make" }

// Priorities of make jobs. River fetches a queue's jobs by priority, then by scheduled time: a
// run's makes (a user waits for them) go before the thousands of background makes the feeder
// keeps waiting.
const (
	PriorityRunMake        = 1
	PriorityBackgroundMake = 2
)

// InsertOpts pins PopulateMakeArgs to QueuePopulate, a run's makes at a better priority than the
// background's. Failures of make itself are recorded in the jobs table rather than retried;
// attempts only cover infrastructure errors.
func (a PopulateMakeArgs) InsertOpts() river.InsertOpts {
	priority := PriorityBackgroundMake
	if a.RunID != 0 {
		priority = PriorityRunMake
	}
	return river.InsertOpts{Queue: QueuePopulate, MaxAttempts: 5, Priority: priority}
}

// PopulateScheduleArgs asks the populate-worker to schedule the missing keys of a computed table
// (every table when Table is empty) and, with Cleanup, to remove orphaned jobs first. Any service
// may enqueue it after writing upstream rows; the worker applies min_scheduling_interval. Two
// such jobs running at once are safe: schedule_jobs of a table holds its scheduling event's row
// lock, so the second waits for the first and then finds the interval not yet passed.
type PopulateScheduleArgs struct {
	// Table is the computed table's registered name; empty means every registered table.
	Table string `json:"table,omitempty"`

	// Force reschedules keys whose job is in error or ignore.
	Force bool `json:"force,omitempty"`

	// Cleanup runs cleanup_jobs before scheduling (upstream or target rows were deleted).
	Cleanup bool `json:"cleanup,omitempty"`
}

// Kind is the job kind of PopulateScheduleArgs.
func (PopulateScheduleArgs) Kind() string { return "populate_schedule" }

// InsertOpts pins PopulateScheduleArgs to QueuePopulateMaintenance. Identical requests waiting or
// running within one PopulateSchedulePeriod collapse into one, which is what rate-limits a burst
// of upstream events (River requires running among the unique states; a producer whose insert is
// skipped as a duplicate retries). The period bounds how long a job River still shows running
// can hold back identical ones: a replica killed inside a schedule leaves its job running until
// River rescues it, and without the period no identical schedule could be inserted meanwhile.
func (PopulateScheduleArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueuePopulateMaintenance,
		MaxAttempts: 5,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByPeriod: PopulateSchedulePeriod, ByState: UnfinishedStates()},
	}
}

// PopulateSchedulePeriod is the window within which identical PopulateScheduleArgs collapse.
const PopulateSchedulePeriod = 10 * time.Second

// PopulateCleanupArgs asks the populate-worker to run cleanup_jobs on a computed table (every
// table when Table is empty). It is the daily periodic job.
type PopulateCleanupArgs struct {
	// Table is the computed table's registered name; empty means every registered table.
	Table string `json:"table,omitempty"`
}

// Kind is the job kind of PopulateCleanupArgs.
func (PopulateCleanupArgs) Kind() string { return "populate_cleanup" }

// InsertOpts pins PopulateCleanupArgs to QueuePopulateMaintenance.
func (PopulateCleanupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueuePopulateMaintenance, MaxAttempts: 5}
}
