// Package populate fills DataJoint-style computed tables. A computed table is a target table, a
// key_source query producing the primary keys that should exist, and a make that computes the
// rows of one key. The package keeps DataJoint's jobs table: schedule_jobs adds the missing keys
// in one set-based statement (and their River jobs in the same transaction), a worker reserves a
// key atomically before running make, success commits the rows, the job status and the River
// completion together, errors are recorded with message and stack, dead reservations are
// reclaimed, and cleanup_jobs removes jobs whose key is gone.
//
// The files form floors: each uses only files on the floors below it, never one above, so the
// package reads from the bottom up.
//
//   - What the rest stands on: key.go (a key and its values), errors.go (a make's error as
//     DataJoint records it), table.go, restriction.go and registry.go (computed tables and how
//     keys are restricted), jobs.go (the jobs table: statuses, rows, reads, gauges), metrics.go.
//   - engine.go (the Engine, its Config and the makes it watches for cancelled runs) and opts.go
//     (a populate run's options).
//   - enqueue.go (who asks for a make, a run or the background, and the one place make and feed
//     jobs are inserted and keys handed on or back), function.go (HTTP function makes),
//     definitions.go (the tables stored in table_definitions: seeded from the tables file,
//     defined and retired over the API, looked up, and their change triggers), notify.go (the
//     listener: changes that ask for a schedule, definitions that changed).
//   - feed.go (the feeder), schedule.go (schedule_jobs), run.go (a run's counts, its end,
//     cancel), reserve.go (reserving a key, and the statements sent with a transaction's first
//     round trip).
//   - populate.go (starting a run), manage.go (reschedule, ignore, progress), cleanup.go
//     (cleanup_jobs and the reclaim sweep).
//   - make.go: one make job from reservation to the transaction that records its end.
//
// Everything that reaches SQL from outside the process (restrictions, key hashes, statuses) is a
// bind parameter; only table and column names from registration, which the operator controls and
// which are validated against the database at start, are spliced into statements, quoted.
package populate

import (
	"os"

	"github.com/riverqueue/river"

	"drover.dev/services/populate-worker/internal/store"
)

// queries runs the statements of package store.
var queries = store.Queries

// riverInsert is one job for InsertManyFastTx.
type riverInsert = river.InsertManyParams

// pid is this process's id as the jobs table stores it.
func pid() int32 { return int32(os.Getpid()) }
