package populate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// MakeKey is the entry point of the River worker of populate_make jobs: reserve the job of hash
// in table, make it and finish it, calling complete inside the finishing transaction. A job that
// is no longer scheduled (made by another worker, ignored, cleaned up, or a duplicate delivery)
// only runs complete. It returns make's error separately from a failure to record anything.
func (e *Engine) MakeKey(ctx context.Context, table, hash string, complete CompleteFunc) (makeErr, err error) {
	return e.makeKey(ctx, 0, table, hash, complete)
}

// MakeRunKey is the entry point of the River worker of populate_run_make jobs: MakeKey for a key
// of populate run run. A run that stopped taking keys (cancelled, failed, interrupted) has the key
// dropped without make; a key that needs no make is counted skipped. Either way the run's next
// key is enqueued in the same transaction, and a running make is cut off when the run is
// cancelled.
func (e *Engine) MakeRunKey(ctx context.Context, run int64, table, hash string, complete CompleteFunc) (makeErr, err error) {
	st, err := queries.RunGet(ctx, e.pool, run)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("populate run %d: %w", run, err)
	}
	if err != nil || st.State != string(RunRunning) || st.Stopping != nil {
		return nil, pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			if err := e.settleRunKeys(ctx, tx, run, table, hash, keyDropped, nil, ""); err != nil {
				return err
			}
			return callComplete(ctx, tx, complete, nil)
		})
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer e.watch.watch(run, cancel)()
	return e.makeKey(ctx, run, table, hash, complete)
}

// FailRunKey ends a key of populate run run whose make job spent its last attempt on an
// infrastructure error: in one transaction, the key is counted an error in the run (stopping it
// as a make's error does, unless suppress_errors) and end ends the River job (discarded with the
// same error), so the run does not wait for a key no job will make. Should this transaction fail
// too, River discards the job and the reclaim sweep ends the key.
func (e *Engine) FailRunKey(ctx context.Context, run int64, table, hash string, job int64, cause error, end func(context.Context, pgx.Tx) error) error {
	msg := orphanMessage(job, "discarded", cause.Error())
	return pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if err := e.settleRunKeys(ctx, tx, run, table, hash, keyError, &msg, stopError); err != nil {
			return err
		}
		return end(ctx, tx)
	})
}

func (e *Engine) makeKey(ctx context.Context, run int64, table, hash string, complete CompleteFunc) (makeErr, err error) {
	t, err := e.tables.Get(table)
	if err != nil {
		return nil, err
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire connection for %s/%s: %w", table, hash, err)
	}
	held := &heldConn{conn: conn}
	defer held.release()
	meta := e.runMetadata("river")
	if run != 0 {
		meta["run_id"] = run
	}
	r, err := e.reserveKey(ctx, conn, t, hash, meta)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if run != 0 {
				if err := e.settleRunKeys(ctx, tx, run, table, hash, keySkipped, nil, ""); err != nil {
					return err
				}
			}
			return callComplete(ctx, tx, complete, nil)
		})
	}
	r.held = held
	makeErr, err = e.run(ctx, r, complete)
	if errors.Is(err, errAlreadyMade) {
		return nil, nil // settled, River job included, without make
	}
	if errors.Is(err, ErrNotReserved) {
		// Reclaimed while we made it; the reclaim enqueued a new make job, so this one is done.
		return makeErr, pgx.BeginFunc(context.WithoutCancel(ctx), e.pool, func(tx pgx.Tx) error { return callComplete(ctx, tx, complete, nil) })
	}
	return makeErr, err
}
