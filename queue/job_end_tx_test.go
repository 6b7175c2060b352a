package queue

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// endArgs is a job whose worker ends it as its Args say.
type endArgs struct {
	State string `json:"state"`
}

func (endArgs) Kind() string { return "end_test" }

// endWorker ends its job with JobEndTx in a transaction that also writes a row of its own, and
// then returns nil as a worker does after JobCompleteTx.
type endWorker struct {
	river.WorkerDefaults[endArgs]
	tx pgx.Tx
}

func (w *endWorker) Work(ctx context.Context, job *river.Job[endArgs]) error {
	if _, err := w.tx.Exec(ctx, `INSERT INTO outcome VALUES ($1)`, job.Args.State); err != nil {
		return err
	}
	return JobEndTx(ctx, w.tx, job, JobEnd{
		State: rivertype.JobState(job.Args.State), Err: errors.New("exit status 1"),
		Output: map[string]any{"stands_for": "build 42"},
	})
}

// riverDB is a database holding River's tables in its public schema, shared by this package's
// tests, which each work in a transaction rolled back at the end.
const riverDB = "drover_queue_test"

// riverURL prepares riverDB once per test binary and returns its URL.
var riverURL = sync.OnceValues(func() (string, error) { return prepareRiverDB(context.Background()) })

// prepareRiverDB creates riverDB when missing and migrates River into it, once per test binary;
// an advisory lock keeps test binaries running at once from migrating together.
func prepareRiverDB(ctx context.Context) (string, error) {
	server := os.Getenv("DATABASE_URL")
	if server == "" {
		server = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(hashtext('drover_queue_test'))`); err != nil {
		return "", err
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, riverDB).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+riverDB); err != nil {
			return "", err
		}
	}
	u.Path = "/" + riverDB
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		return "", err
	}
	defer pool.Close()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return "", err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return "", err
	}
	_, err = admin.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('drover_queue_test'))`)
	return u.String(), err
}

// riverTx opens a transaction on riverDB with an outcome table of its own, rolled back when the
// test ends.
func riverTx(t *testing.T) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	url, err := riverURL()
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	_, err = tx.Exec(ctx, "CREATE TEMP TABLE outcome (state text) ON COMMIT DROP")
	require.NoError(t, err)
	return tx
}

func TestJobEndTx(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		state     rivertype.JobState
		hasErrors bool
	}{
		"Discarded": {rivertype.JobStateDiscarded, true},
		"Cancelled": {rivertype.JobStateCancelled, true},
		"Completed": {rivertype.JobStateCompleted, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := riverTx(t)

			w := &endWorker{tx: tx}
			tw := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
			res, err := tw.Work(ctx, t, tx, endArgs{State: string(tt.state)}, nil)
			require.NoError(t, err)

			var got string
			require.NoError(t, tx.QueryRow(ctx, `SELECT state FROM outcome`).Scan(&got))
			require.Equal(t, string(tt.state), got)
			require.Equal(t, tt.state, res.Job.State, "River's completer leaves the state JobEndTx set")
			require.NotNil(t, res.Job.FinalizedAt)
			require.JSONEq(t, `{"output": {"stands_for": "build 42"}}`, string(res.Job.Metadata))
			if !tt.hasErrors {
				require.Empty(t, res.Job.Errors)
				return
			}
			require.Len(t, res.Job.Errors, 1)
			require.Equal(t, "exit status 1", res.Job.Errors[0].Error)
			require.Equal(t, 1, res.Job.Errors[0].Attempt)
		})
	}
}

func TestJobFailTxAndJobCancelTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	for name, tt := range map[string]struct {
		end   func(context.Context, pgx.Tx, *river.Job[failArgs], error) error
		state rivertype.JobState
	}{
		"Fail":   {JobFailTx[failArgs], rivertype.JobStateDiscarded},
		"Cancel": {JobCancelTx[failArgs], rivertype.JobStateCancelled},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tx := riverTx(t)
			w := river.WorkFunc(func(ctx context.Context, job *river.Job[failArgs]) error {
				return tt.end(ctx, tx, job, errors.New("make raised ValueError"))
			})
			res, err := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w).Work(ctx, t, tx, failArgs{}, nil)
			require.NoError(t, err)
			require.Equal(t, tt.state, res.Job.State)
			require.Equal(t, "make raised ValueError", res.Job.Errors[0].Error)
		})
	}
}

type failArgs struct{}

func (failArgs) Kind() string { return "fail_test" }

func TestJobEndTxRefusesAJobNotRunning(t *testing.T) {
	t.Parallel()
	job := &river.Job[failArgs]{JobRow: &rivertype.JobRow{ID: 1, Kind: "fail_test", State: rivertype.JobStateCompleted}}
	err := JobFailTx(context.Background(), nil, job, errors.New("late"))
	require.ErrorIs(t, err, ErrJobNotRunning)
}

func TestJobEndTxRefusesAStateThatIsNotFinal(t *testing.T) {
	t.Parallel()
	for _, state := range []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateCompleted} {
		_, err := endParams(&rivertype.JobRow{ID: 1}, JobEnd{State: state}, time.Now())
		require.ErrorContains(t, err, fmt.Sprintf("cannot end as %q", state))
	}
}

// TestAdapterMatchesRiver holds the adapter to River's own behaviour: a job JobFailTx discards
// is the row River leaves when the worker's last attempt returns the error, and a job JobCancelTx
// cancels is the row River leaves when the worker returns river.JobCancel(err). A River release
// that ends jobs otherwise fails it.
func TestAdapterMatchesRiver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cause := errors.New("make raised ValueError")

	for name, tt := range map[string]struct {
		adapter func(context.Context, pgx.Tx, *river.Job[failArgs], error) error
		river   func(error) error
	}{
		"Discard": {JobFailTx[failArgs], func(err error) error { return err }},
		"Cancel":  {JobCancelTx[failArgs], river.JobCancel},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			work := func(end func(ctx context.Context, tx pgx.Tx, job *river.Job[failArgs]) error) *rivertype.JobRow {
				tx := riverTx(t)
				w := river.WorkFunc(func(ctx context.Context, job *river.Job[failArgs]) error { return end(ctx, tx, job) })
				res, _ := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w).
					Work(ctx, t, tx, failArgs{}, &river.InsertOpts{MaxAttempts: 1})
				require.NotNil(t, res)
				return res.Job
			}
			ours := work(func(ctx context.Context, tx pgx.Tx, job *river.Job[failArgs]) error {
				return tt.adapter(ctx, tx, job, cause)
			})
			theirs := work(func(context.Context, pgx.Tx, *river.Job[failArgs]) error { return tt.river(cause) })

			require.Equal(t, theirs.State, ours.State)
			require.Equal(t, theirs.Attempt, ours.Attempt)
			require.Equal(t, theirs.MaxAttempts, ours.MaxAttempts)
			require.NotNil(t, ours.FinalizedAt)
			require.NotNil(t, theirs.FinalizedAt)
			require.Len(t, ours.Errors, len(theirs.Errors))
			// River names the JobCancel wrapper in the error it records; the adapter records the cause.
			require.Equal(t, strings.TrimPrefix(theirs.Errors[0].Error, "JobCancelError: "), ours.Errors[0].Error)
			require.Equal(t, theirs.Errors[0].Attempt, ours.Errors[0].Attempt)
		})
	}
}

// TestAdapterPinnedToRiver fails when River's module or its schema moves past the versions the
// adapter was checked against: read River's changes to JobSetStateIfRunningMany, rerun
// TestAdapterMatchesRiver, then move RiverVersion and RiverSchemaVersion.
func TestAdapterPinnedToRiver(t *testing.T) {
	t.Parallel()
	// A test binary carries no module versions in its build info: go.mod is the record.
	gomod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for _, mod := range []string{"github.com/riverqueue/river", "github.com/riverqueue/river/riverdriver", "github.com/riverqueue/river/riverdriver/riverpgxv5"} {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` (v\S+)`).FindSubmatch(gomod)
		require.NotNil(t, m, "go.mod requires %s", mod)
		require.Equal(t, RiverVersion, string(m[1]), "%s moved: check the adapter in job_end_tx.go against it", mod)
	}

	migrator, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	require.NoError(t, err)
	all := migrator.AllVersions()
	require.Equal(t, RiverSchemaVersion, all[len(all)-1].Version, "River's schema moved: check the adapter in job_end_tx.go against it")

	url, err := riverURL()
	require.NoError(t, err)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	defer pool.Close()
	existing, err := must(rivermigrate.New(riverpgxv5.New(pool), nil)).ExistingVersions(context.Background())
	require.NoError(t, err)
	require.Equal(t, RiverSchemaVersion, existing[len(existing)-1].Version, "the test database's River schema")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
