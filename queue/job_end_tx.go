package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// RiverVersion is the River release this file's adapter was written and tested against
// (TestAdapterPinnedToRiver fails on any other). River's public API ends a job inside the
// caller's transaction only as completed (river.JobCompleteTx); discarding or cancelling a
// running job with its error inside the transaction that records the failure has no public
// call, so JobEndTx makes River's own driver call for it, exactly as JobCompleteTx does for a
// completion. An upstream JobDiscardTx / JobCancelTx-while-running taking a tx would replace it.
// The liveness sweep (sweep.go) is the adapter's other call: River's rescuer gives back jobs by
// their run time only, so the sweep makes the driver call the rescuer makes (JobRescueMany) for
// the jobs of a dead process.
const RiverVersion = "v0.51.2"

// RiverSchemaVersion is the last River migration the adapter was tested against.
const RiverSchemaVersion = 8

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

	// Output is what the job turned out to stand for (the batch it ran, the build it claimed). It
	// is stored where river.RecordOutput stores a job's output, the metadata's "output" key, and
	// River UI shows it as the job's output.
	Output any
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
// job's Work (it needs the River client in ctx, as river.JobCompleteTx does). A completion is
// river.RecordOutput and river.JobCompleteTx; a discard or a cancel is the adapter described at
// RiverVersion, leaving the row as River leaves a job whose worker returned the error itself.
func JobEndTx[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T], end JobEnd) error {
	if job.State != rivertype.JobStateRunning {
		return fmt.Errorf("end %s job %d: %w", job.Kind, job.ID, ErrJobNotRunning)
	}
	if end.State == rivertype.JobStateCompleted {
		return completeTx(ctx, tx, job, end.Output)
	}
	client := river.ClientFromContext[pgx.Tx](ctx)
	if client == nil {
		return fmt.Errorf("end %s job %d: no River client in context (call it from Work)", job.Kind, job.ID)
	}
	params, err := endParams(job.JobRow, end, time.Now().UTC())
	if err != nil {
		return fmt.Errorf("end %s job %d: %w", job.Kind, job.ID, err)
	}
	rows, err := client.Driver().UnwrapExecutor(tx).JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
		ID:              []int64{params.ID},
		Attempt:         []*int{params.Attempt},
		ErrData:         [][]byte{params.ErrData},
		FinalizedAt:     []*time.Time{params.FinalizedAt},
		MetadataDoMerge: []bool{params.MetadataDoMerge},
		MetadataUpdates: [][]byte{params.MetadataUpdates},
		ScheduledAt:     []*time.Time{params.ScheduledAt},
		Schema:          client.Schema(),
		State:           []rivertype.JobState{params.State},
	})
	if err != nil {
		return fmt.Errorf("end %s job %d as %s: %w", job.Kind, job.ID, end.State, err)
	}
	if len(rows) == 0 || rows[0].State != end.State {
		return fmt.Errorf("end %s job %d as %s: %w", job.Kind, job.ID, end.State, ErrJobNotRunning)
	}
	return nil
}

// completeTx is river.JobCompleteTx with output recorded first.
func completeTx[T river.JobArgs](ctx context.Context, tx pgx.Tx, job *river.Job[T], output any) error {
	if output != nil {
		if err := river.RecordOutput(ctx, output); err != nil {
			return fmt.Errorf("complete %s job %d: record output: %w", job.Kind, job.ID, err)
		}
	}
	_, err := river.JobCompleteTx[*riverDriver](ctx, tx, job)
	switch {
	case errors.Is(err, rivertype.ErrNotFound):
		return fmt.Errorf("complete %s job %d: %w", job.Kind, job.ID, ErrJobNotRunning)
	case err != nil:
		return fmt.Errorf("complete %s job %d: %w", job.Kind, job.ID, err)
	}
	return nil
}

// endParams builds River's own set-state parameters for a discard or a cancel, so the row looks
// exactly as River would leave it had the worker returned the error itself.
func endParams(job *rivertype.JobRow, end JobEnd, now time.Time) (*riverdriver.JobSetStateIfRunningParams, error) {
	var meta []byte
	if end.Output != nil {
		var err error
		if meta, err = json.Marshal(map[string]any{rivertype.MetadataKeyOutput: end.Output}); err != nil {
			return nil, fmt.Errorf("encode output: %w", err)
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
	case rivertype.JobStateDiscarded:
		return riverdriver.JobSetStateDiscarded(job.ID, now, errData, meta), nil
	case rivertype.JobStateCancelled:
		return riverdriver.JobSetStateCancelled(job.ID, now, errData, meta), nil
	}
	return nil, fmt.Errorf("a job cannot end as %q", end.State)
}

// riverDriver is the River driver every Drover client uses.
type riverDriver = riverpgxv5.Driver
