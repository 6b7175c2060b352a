package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// ErrJobNotRunning is returned by JobFailTx, JobCancelTx and JobEndTx for a job that is no longer
// running (another transaction finished it, or it was rescued meanwhile).
var ErrJobNotRunning = errors.New("job not running")

// JobEnd says how a running River job ends in JobEndTx.
type JobEnd struct {
	// State is rivertype.JobStateCompleted, JobStateDiscarded or JobStateCancelled.
	State rivertype.JobState

	// Err is appended to the job's errors (with the attempt and the time) when the job ends
	// discarded or cancelled; River UI shows it on the job.
	Err error

	// Metadata is merged into the job's metadata, e.g. what the job turned out to stand for.
	Metadata map[string]any
}

// JobFailTx ends job as discarded, with cause in its errors, as part of tx: River's counterpart of
// river.JobCompleteTx for work that failed in a way retrying cannot fix (a build that failed, a
// make that raised). The service records the failure in its own tables on the same tx, so River
// UI and the service's API agree once tx commits and neither does before. The worker then returns
// nil: River's completer finds the job no longer running and leaves it as it is.
func JobFailTx[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T], cause error) error {
	return JobEndTx(ctx, tx, job, JobEnd{State: rivertype.JobStateDiscarded, Err: cause})
}

// JobCancelTx ends job as cancelled, with cause in its errors, as part of tx, for work that
// stopped because someone cancelled it. See JobFailTx.
func JobCancelTx[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T], cause error) error {
	return JobEndTx(ctx, tx, job, JobEnd{State: rivertype.JobStateCancelled, Err: cause})
}

// JobEndTx ends the running job as end says, as part of tx. It must be called from within the
// job's Work (it needs the River client in ctx, as river.JobCompleteTx does).
func JobEndTx[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T], end JobEnd) error {
	if job.State != rivertype.JobStateRunning {
		return fmt.Errorf("end %s job %d: %w", job.Kind, job.ID, ErrJobNotRunning)
	}
	client, params, err := endSetup(ctx, job.JobRow, end)
	if err != nil {
		return err
	}
	rows, err := client.Driver().UnwrapExecutor(tx).JobSetStateIfRunningMany(ctx, params)
	if err != nil {
		return fmt.Errorf("end %s job %d as %s: %w", job.Kind, job.ID, end.State, err)
	}
	if len(rows) == 0 || rows[0].State != end.State {
		return fmt.Errorf("end %s job %d as %s: %w", job.Kind, job.ID, end.State, ErrJobNotRunning)
	}
	return nil
}

// BatchJobEnd queues JobEndTx's statement, River's own, on b, a batch sent inside the
// transaction the job's end must commit with (after pgx.Batch.BeginTx, or sent on that
// transaction): the end travels with the transaction's other statements instead of taking a round
// trip of its own. The statement's result is checked when the batch's results reach it (or are
// closed): a job no longer running is ErrJobNotRunning, as from JobEndTx, and the caller must
// then not commit. Like JobEndTx, it must be called from within the job's Work.
func BatchJobEnd[T river.JobArgs](ctx context.Context, b *pgx.Batch, job *river.Job[T], end JobEnd) error {
	if job.State != rivertype.JobStateRunning {
		return fmt.Errorf("end %s job %d: %w", job.Kind, job.ID, ErrJobNotRunning)
	}
	client, params, err := endSetup(ctx, job.JobRow, end)
	if err != nil {
		return err
	}
	// River's driver builds the statement and runs it on the transaction it is given; given one
	// that only records it, the statement is what JobEndTx would run, for the batch to carry.
	rec := &recordingTx{}
	if _, err := client.Driver().UnwrapExecutor(rec).JobSetStateIfRunningMany(ctx, params); !errors.Is(err, errRecorded) {
		return fmt.Errorf("end %s job %d as %s: build River's statement: %w", job.Kind, job.ID, end.State, err)
	}
	b.Queue(rec.sql, rec.args...).Query(func(rows pgx.Rows) error {
		state := -1
		for i, f := range rows.FieldDescriptions() {
			if f.Name == "state" {
				state = i
			}
		}
		ended := false
		for rows.Next() {
			ended = state >= 0 && string(rows.RawValues()[state]) == string(end.State)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("end %s job %d as %s: %w", job.Kind, job.ID, end.State, err)
		}
		if !ended {
			return fmt.Errorf("end %s job %d as %s: %w", job.Kind, job.ID, end.State, ErrJobNotRunning)
		}
		return nil
	})
	return nil
}

// endSetup is the River client in ctx and River's parameters for ending job as end says.
func endSetup(ctx context.Context, job *rivertype.JobRow, end JobEnd) (*river.Client[pgx.Tx], *riverdriver.JobSetStateIfRunningManyParams, error) {
	client := river.ClientFromContext[pgx.Tx](ctx)
	if client == nil {
		return nil, nil, fmt.Errorf("end %s job %d: no River client in context (call it from Work)", job.Kind, job.ID)
	}
	params, err := endParams(job, end, time.Now().UTC())
	if err != nil {
		return nil, nil, fmt.Errorf("end %s job %d: %w", job.Kind, job.ID, err)
	}
	return client, &riverdriver.JobSetStateIfRunningManyParams{
		ID:              []int64{params.ID},
		Attempt:         []*int{params.Attempt},
		ErrData:         [][]byte{params.ErrData},
		FinalizedAt:     []*time.Time{params.FinalizedAt},
		MetadataDoMerge: []bool{params.MetadataDoMerge},
		MetadataUpdates: [][]byte{params.MetadataUpdates},
		ScheduledAt:     []*time.Time{params.ScheduledAt},
		Schema:          client.Schema(),
		State:           []rivertype.JobState{params.State},
	}, nil
}

// errRecorded is what recordingTx answers a query with.
var errRecorded = errors.New("statement recorded, not run")

// recordingTx is a pgx.Tx that records the one query it is given instead of running it. Its
// connection is nil, so River's driver builds the statement for its default query mode (pgx's
// statement cache, what the services' pools use). QueryRow and Exec are refused; every other
// method is unimplemented.
type recordingTx struct {
	pgx.Tx
	sql  string
	args []any
}

func (r *recordingTx) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.sql, r.args = sql, args
	return nil, errRecorded
}

// errNotRecorded is what recordingTx answers the statements it does not record with: River ran
// one before the statement wanted.
var errNotRecorded = errors.New("statement before the one to record")

// QueryRow is refused (River's driver detects the server's capabilities with it on first use).
func (r *recordingTx) QueryRow(context.Context, string, ...any) pgx.Row {
	return refusedRow{}
}

// Exec is refused.
func (r *recordingTx) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errNotRecorded
}

// refusedRow is recordingTx's answer to QueryRow.
type refusedRow struct{}

func (refusedRow) Scan(...any) error { return errNotRecorded }

func (r *recordingTx) Conn() *pgx.Conn { return nil }

// endParams builds River's own set-state parameters for end, so the row looks exactly as River
// would leave it had the worker returned the error itself.
func endParams(job *rivertype.JobRow, end JobEnd, now time.Time) (*riverdriver.JobSetStateIfRunningParams, error) {
	var meta []byte
	if len(end.Metadata) > 0 {
		var err error
		if meta, err = json.Marshal(end.Metadata); err != nil {
			return nil, fmt.Errorf("encode metadata: %w", err)
		}
	}
	var errData []byte
	if end.Err != nil {
		var err error
		errData, err = json.Marshal(rivertype.AttemptError{At: now, Attempt: job.Attempt, Error: end.Err.Error()})
		if err != nil {
			return nil, fmt.Errorf("encode error: %w", err)
		}
	}
	switch end.State {
	case rivertype.JobStateCompleted:
		return riverdriver.JobSetStateCompleted(job.ID, now, meta), nil
	case rivertype.JobStateDiscarded:
		return riverdriver.JobSetStateDiscarded(job.ID, now, errData, meta), nil
	case rivertype.JobStateCancelled:
		return riverdriver.JobSetStateCancelled(job.ID, now, errData, meta), nil
	}
	return nil, fmt.Errorf("a job cannot end as %q", end.State)
}
