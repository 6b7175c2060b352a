package populate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
)

// MakeKey is the entry point of the River worker of populate_make jobs: reserve the job of hash
// in table, make it and finish it, calling complete inside the finishing transaction with how it
// ended. A key that is no longer scheduled (made or being made by another job, failed, ignored,
// cleaned up) is not made, unless opts.Retried and it is in error: then River UI's Retry makes it
// again. It returns how the delivery ended separately from a failure to record anything.
func (e *Engine) MakeKey(ctx context.Context, table, hash string, opts MakeOpts, complete CompleteFunc) (End, error) {
	return e.makeKey(ctx, 0, table, hash, opts, complete)
}

// MakeRunKey is the entry point of the River worker of populate_run_make jobs: MakeKey for a key
// of populate run run. A run that stopped taking keys (cancelled, failed, interrupted) has the key
// dropped without make; a key that needs no make is counted skipped. Either way the run's next
// key is enqueued in the same transaction, and a running make is cut off when the run is
// cancelled. A job retried in River UI (opts.Retried) makes its key as MakeKey does, outside the
// run, which counted the key when the job first ended.
func (e *Engine) MakeRunKey(ctx context.Context, run int64, table, hash string, opts MakeOpts, complete CompleteFunc) (End, error) {
	if opts.Retried {
		return e.makeKey(ctx, 0, table, hash, opts, complete)
	}
	st, err := queries.RunGet(ctx, e.pool, run)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return End{}, fmt.Errorf("populate run %d: %w", run, err)
	}
	if err != nil || st.State != string(RunRunning) || st.Stopping != nil {
		var end End
		return end, pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			n, err := e.settleRun(ctx, tx, run, table, hash, keyDropped, nil, "")
			if err != nil {
				return err
			}
			end = End{Outcome: OutcomeDropped, Settled: n,
				Note: fmt.Sprintf("populate run %d stopped taking keys; the key was dropped from it without make", run)}
			if n == 0 {
				end = End{Outcome: OutcomeSkipped, Note: fmt.Sprintf("populate run %d no longer holds the key; nothing to do "+
					"(POST /v1/tables/%s/populate starts a new run)", run, table)}
			}
			return callComplete(ctx, tx, complete, end)
		})
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer e.watch.watch(run, cancel)()
	return e.makeKey(ctx, run, table, hash, opts, complete)
}

// FailRunKey ends a key of populate run run whose make job spent its last attempt on an
// infrastructure error: in one transaction, the key is counted an error in the run (stopping it
// as a make's error does, unless suppress_errors) and end ends the River job (discarded with the
// same error), so the run does not wait for a key no job will make. Should this transaction fail
// too, River discards the job and the reclaim sweep ends the key.
func (e *Engine) FailRunKey(ctx context.Context, run int64, table, hash string, job int64, cause error, end func(context.Context, pgx.Tx) error) error {
	msg := orphanMessage(job, "discarded", cause.Error())
	return pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if _, err := e.settleRun(ctx, tx, run, table, hash, keyError, &msg, stopError); err != nil {
			return err
		}
		return end(ctx, tx)
	})
}

func (e *Engine) makeKey(ctx context.Context, run int64, table, hash string, opts MakeOpts, complete CompleteFunc) (End, error) {
	t, err := e.tables.Get(table)
	if err != nil {
		return End{}, err
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return End{}, fmt.Errorf("acquire connection for %s/%s: %w", table, hash, err)
	}
	held := &heldConn{conn: conn}
	defer held.release()
	meta := e.runMetadata("river")
	if run != 0 {
		meta["run_id"] = run
	}
	if opts.JobID != 0 {
		meta["river_job_id"] = opts.JobID
	}
	r, err := e.reserveKey(ctx, conn, t, hash, meta, opts.Retried)
	if err != nil {
		return End{}, err
	}
	if r == nil {
		return e.skip(ctx, conn, run, t, hash, opts, complete)
	}
	r.held = held
	r.run = run
	end, err := e.run(ctx, r, complete)
	if errors.Is(err, ErrNotReserved) {
		// Reclaimed while we made it; the reclaim enqueued a new make job, which makes the key.
		end = End{Outcome: OutcomeSkipped, Note: fmt.Sprintf("its reservation of key %s of %s was reclaimed while it made it "+
			"(lease expired or connection lost); the make job the reclaim enqueued makes it", hash, table)}
		ctx := context.WithoutCancel(ctx)
		return end, pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error { return callComplete(ctx, tx, complete, end) })
	}
	return end, err
}

// ErrKeyBusy is returned for a run's make whose key another make job holds reserved: the run
// waits for that make's end, which settles the key in the run (made elsewhere, or skipped when it
// fails); the River worker snoozes the job meanwhile.
var ErrKeyBusy = errors.New("key reserved by another make job")

// skip ends the delivery of a make job whose key it could not reserve, saying why (skipNote);
// a run's make counts the key in its run: made elsewhere when another make made it, skipped when
// it needs no make for another reason.
func (e *Engine) skip(ctx context.Context, conn *pgxpool.Conn, run int64, t *Table, hash string, opts MakeOpts, complete CompleteFunc) (End, error) {
	var end End
	return end, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		note, status, err := skipNote(ctx, tx, t, hash, opts.Retried)
		if err != nil {
			return err
		}
		end = End{Outcome: OutcomeSkipped, Note: note}
		if run == 0 {
			return callComplete(ctx, tx, complete, end)
		}
		outcome := keySkipped
		switch status {
		case StatusReserved:
			return ErrKeyBusy
		case StatusSuccess, "":
			made, err := runKeyInTarget(ctx, tx, run, t, hash)
			if err != nil {
				return err
			}
			if made {
				outcome = keyElsewhere
			}
		}
		if end.Settled, err = e.settleRun(ctx, tx, run, t.Name, hash, outcome, nil, ""); err != nil {
			return err
		}
		return callComplete(ctx, tx, complete, end)
	})
}

// runKeyInTarget reports whether the key of hash, as run took it, is in t's target.
func runKeyInTarget(ctx context.Context, tx pgx.Tx, run int64, t *Table, hash string) (bool, error) {
	raw, err := queries.RunKeyGet(ctx, tx, dbsqlc.RunKeyGetParams{RunID: run, TableName: t.Name, KeyHash: hash})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("key %s of populate run %d: %w", hash, run, err)
	}
	key, err := scanKey(raw)
	if err != nil {
		return false, err
	}
	return targetHas(ctx, tx, t, key)
}
