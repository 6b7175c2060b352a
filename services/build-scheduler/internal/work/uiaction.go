package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/postgres"
)

// stoppedTimeout bounds the transaction that records a Cancel after the work it stopped.
const stoppedTimeout = 10 * time.Second

// stopped ends job cancelled after River UI's Cancel stopped its work (whose transaction rolled
// back, so it changed nothing), recording the press in the job graph's events in the same
// transaction, and logs it. buildJobID is the build job the work was about, 0 for none.
func stopped[T river.JobArgs](ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, job *river.Job[T], buildJobID int64, did string) error {
	queue.LogUIAction(ctx, orDefault(logger), job.JobRow, queue.UIActionCancel, did)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stoppedTimeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var group int64
		if buildJobID != 0 {
			group = groupOf(ctx, tx, buildJobID)
		}
		err := jobgraph.RecordAction(ctx, tx, idOrNil(group), idOrNil(buildJobID), "River UI cancel of %s %d while it ran: %s", job.Kind, job.ID, did)
		if err != nil {
			return err
		}
		return queue.JobCancelTx(ctx, tx, job, errors.New("cancelled in River UI: "+did))
	})
	if err != nil {
		// River ends the job cancelled anyway: its work returned an error after JobCancel.
		return fmt.Errorf("record the cancel of %s %d: %w", job.Kind, job.ID, err)
	}
	return nil
}

// groupOf returns the group of build job jobID, 0 when there is no such job.
func groupOf(ctx context.Context, db postgres.DBTX, jobID int64) int64 {
	j, err := jobgraph.GetJob(ctx, db, jobID)
	if err != nil {
		return 0
	}
	return j.GroupID
}

// idOrNil is id as a nullable column value, nil for 0.
func idOrNil(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// orDefault is logger, or slog.Default() for a worker built without one (the build-worker
// registers the scheduler's workers without working their queue).
func orDefault(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.Default()
	}
	return logger
}
