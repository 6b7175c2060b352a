// Package queuetest puts River jobs into the states tests need and a running service never makes
// on purpose: a job a process fetched and then died holding, or one that spent its attempts on
// errors long ago. It goes through River's own driver calls (the fetch River's producers run,
// the update River's test factory runs), so no test writes River's tables with SQL of its own
// and a River upgrade that changes them fails to compile here instead of passing silently. It
// also reads back the river_ui_action lines (queue.LogUIAction) a service under test logs, so that
// every test of a River UI button reads them one way (UIActionLog).
package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// DB is where the jobs are: a *pgxpool.Pool or a pgx.Tx.
type DB any

// executor is River's driver executor on db.
func executor(t testing.TB, db DB) riverdriver.Executor {
	t.Helper()
	switch db := db.(type) {
	case *pgxpool.Pool:
		return riverpgxv5.New(db).GetExecutor()
	case pgx.Tx:
		return riverpgxv5.New(nil).UnwrapExecutor(db)
	}
	t.Fatalf("queuetest: %T is neither a *pgxpool.Pool nor a pgx.Tx", db)
	return nil
}

// FetchAsDeadProcess takes up to n available jobs of queue in schema (empty: the search path's)
// as River's producer of a process called clientID fetches them, and returns them running: what
// a process killed right after its fetch leaves behind.
func FetchAsDeadProcess(ctx context.Context, t testing.TB, db DB, schema, queue, clientID string, n int) []*rivertype.JobRow {
	t.Helper()
	now := time.Now().UTC()
	res, err := executor(t, db).JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{
		ClientID: clientID, MaxAttemptedBy: 100, MaxToLock: n, Now: &now, Queue: queue, Schema: schema,
	})
	require.NoError(t, err)
	return res.Jobs
}

// Patch is what SetJob changes on a job; nil fields stay as they are.
type Patch struct {
	State       *rivertype.JobState
	Attempt     *int
	MaxAttempts *int
	AttemptedAt *time.Time
	AttemptedBy []string
	// Finalized sets finalized_at to now (true) or clears it (false).
	Finalized *bool
}

// SetJob changes job id in schema (empty: the search path's) as patch says, with River's own
// full update, and returns the job as it now is.
func SetJob(ctx context.Context, t testing.TB, db DB, schema string, id int64, patch Patch) *rivertype.JobRow {
	t.Helper()
	p := &riverdriver.JobUpdateFullParams{ID: id, Schema: schema}
	if patch.State != nil {
		p.StateDoUpdate, p.State = true, *patch.State
	}
	if patch.Attempt != nil {
		p.AttemptDoUpdate, p.Attempt = true, *patch.Attempt
	}
	if patch.MaxAttempts != nil {
		p.MaxAttemptsDoUpdate, p.MaxAttempts = true, *patch.MaxAttempts
	}
	if patch.AttemptedAt != nil {
		at := patch.AttemptedAt.UTC()
		p.AttemptedAtDoUpdate, p.AttemptedAt = true, &at
	}
	if patch.AttemptedBy != nil {
		p.AttemptedByDoUpdate, p.AttemptedBy = true, patch.AttemptedBy
	}
	if patch.Finalized != nil {
		p.FinalizedAtDoUpdate = true
		if *patch.Finalized {
			now := time.Now().UTC()
			p.FinalizedAt = &now
		}
	}
	job, err := executor(t, db).JobUpdateFull(ctx, p)
	require.NoError(t, err, "set job %d", id)
	return job
}

// SetJobs applies patch to every job of kind in schema and returns how many it changed.
func SetJobs(ctx context.Context, t testing.TB, db DB, schema, kind string, patch Patch) int {
	t.Helper()
	jobs, err := executor(t, db).JobGetByKindMany(ctx, &riverdriver.JobGetByKindManyParams{Kind: []string{kind}, Schema: schema})
	require.NoError(t, err, "list %s jobs", kind)
	for _, job := range jobs {
		SetJob(ctx, t, db, schema, job.ID, patch)
	}
	return len(jobs)
}

// Finish ends job id in schema as state (completed, discarded or cancelled) now, as if its worker
// had ended it: the state of a job a test needs finished without working it.
func Finish(ctx context.Context, t testing.TB, db DB, schema string, id int64, state rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	switch state {
	case rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
	default:
		t.Fatalf("queuetest: %s is not a finished state", state)
	}
	return SetJob(ctx, t, db, schema, id, Patch{State: &state, Finalized: Ptr(true)})
}

// Ptr returns a pointer to v, for Patch's fields.
func Ptr[T any](v T) *T { return &v }
