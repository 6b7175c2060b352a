// Package populate fills DataJoint-style computed tables. A computed table is a target table, a
// key_source query producing the primary keys that should exist, and a make that computes the
// rows of one key. The package keeps DataJoint's jobs table: schedule_jobs adds the missing keys
// in one set-based statement (and their River jobs in the same transaction), a worker reserves a
// key atomically before running make, success commits the rows, the job status and the River
// completion together, errors are recorded with message and stack, dead reservations are
// reclaimed, and cleanup_jobs removes jobs whose key is gone.
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
