// Package store reads and writes batch-runner's tables (schema batch_runner) and reads
// miner-sync's miners table, a documented read-only cross-read. Functions take a DBTX so the
// caller chooses the transaction; nothing above this package imports pgconn.
package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"drover.dev/services/batch-runner/internal/store/dbsqlc"
)

// queries are the statements of query.sql, compiled by sqlc; each takes the DBTX to run on.
var queries = dbsqlc.New()

// ErrNotFound is returned for a batch that does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when another batch is running, or when a batch was already finished
// by another attempt.
var ErrConflict = errors.New("conflict")

// ErrAlreadyDone is returned by BatchStart for a run_batch job whose batch was written already
// (or handed to its shards), and by ShardStart for a shard that has ended: the job was delivered
// again after its outcome committed with its end, which only River UI's Retry does.
var ErrAlreadyDone = errors.New("already ended")

// ErrLeaseLost is returned for a write of an attempt that no longer holds its batch's (or
// shard's) lease: the lease ran out and a takeover handed the batch to another River job, or the
// attempt ended already. The attempt may write nothing more.
var ErrLeaseLost = fmt.Errorf("lease lost: %w", ErrConflict)

// ErrTakenOver is returned by BatchStart, BatchTakeOverStart and ShardStart for a job whose batch
// or shard a takeover handed to another job: the job was the dead attempt's, delivered again by
// River's rescuer, and has nothing left to do.
var ErrTakenOver = errors.New("taken over by another job")

// mapErr turns driver errors into the store's.
func mapErr(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return errors.Join(ErrConflict, err)
	}
	return err
}
