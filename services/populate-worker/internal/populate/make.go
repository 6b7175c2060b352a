package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// querier is what targetHas needs of a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// recordTimeout bounds writing a job's outcome after its context ended (shutdown).
const recordTimeout = 10 * time.Second

// run runs make for r and finishes its job. It returns how the delivery ended (the key made or
// found in the target, or make's error recorded in the jobs table) separately from err, a
// failure to record anything (the reservation stays and is reclaimed later).
func (e *Engine) run(ctx context.Context, r *reservation, complete CompleteFunc) (End, error) {
	leaseCtx, stopLease := context.WithCancel(ctx)
	defer stopLease()
	go e.holdLease(leaseCtx, r)

	start := time.Now()
	end, makeErr := e.makeAndCommit(ctx, r, complete)
	if makeErr == nil && end.Outcome == OutcomeMade {
		e.cfg.Metrics.made(ctx, r.table.Name, r.hash, time.Since(start), nil)
	}
	if makeErr == nil || errors.Is(makeErr, ErrNotReserved) {
		return end, makeErr
	}
	end = End{Outcome: OutcomeError}
	if ctx.Err() != nil {
		makeErr = e.interruption(ctx, makeErr)
		if queue.CancelledRemotely(ctx) {
			end.Outcome = OutcomeCancelled
		}
	}
	end.Err = makeErr
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	err := pgx.BeginFunc(recordCtx, e.recordOn(r), func(tx pgx.Tx) error {
		if err := lockReservation(recordCtx, tx, r); err != nil {
			return err
		}
		msg, err := finishError(recordCtx, tx, r, makeErr)
		if err != nil {
			return err
		}
		if end.Settled, err = e.settleKey(recordCtx, tx, r.by, r.table.Name, r.hash, keyError, &msg, stopFor(makeErr)); err != nil {
			return err
		}
		return callComplete(recordCtx, tx, complete, end)
	})
	if err == nil {
		e.cfg.Metrics.made(ctx, r.table.Name, r.hash, time.Since(start), makeErr)
	}
	return end, err
}

// recordOn is where a failed make's outcome is written: the make's own connection when it is
// still usable, so that recording never waits for a pool connection (with every connection held
// by failing makes it would wait for itself); else the pool, once the broken connection has been
// given back (a query cancelled by shutdown closes it).
func (e *Engine) recordOn(r *reservation) interface {
	Begin(ctx context.Context) (pgx.Tx, error)
} {
	if c := r.conn.Conn(); !r.held.released() && !c.IsClosed() && c.PgConn().TxStatus() == 'I' {
		return r.conn
	}
	r.held.release()
	return e.pool
}

// interruption is the error recorded for a make whose context ended, as DataJoint records it:
// "SystemExit: SIGTERM received" when the process is shutting down, "KeyboardInterrupt" when its
// run was cancelled, and "KeyboardInterrupt: cancelled in River UI" when its River job was (the
// interrupt's class, as DataJoint records Ctrl-C, and who pressed it). What cut it off goes in
// the stack.
func (e *Engine) interruption(ctx context.Context, cause error) error {
	switch {
	case queue.CancelledRemotely(ctx):
		return &MakeError{Class: classKeyboardInterrupt, Message: messageRiverUICancel,
			Stack: "its River job was cancelled in River UI (river.ErrJobCancelledRemotely)\n" + errorChain(cause)}
	case e.stopping.Load():
		return &MakeError{Class: classSystemExit, Message: messageSIGTERM,
			Stack: "make did not finish within the shutdown budget (SOFT_STOP_TIMEOUT)\n" + errorChain(cause)}
	case errors.Is(context.Cause(ctx), errRunCancelled):
		return &MakeError{Class: classKeyboardInterrupt, Stack: "populate run cancelled\n" + errorChain(cause)}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &MakeError{Class: "TimeoutError", Message: "make did not finish within MAKE_TIMEOUT", Stack: errorChain(cause)}
	}
	return &MakeError{Class: classKeyboardInterrupt, Message: "make interrupted: " + context.Cause(ctx).Error(), Stack: errorChain(cause)}
}

// makeAndCommit runs the three parts of make: fetch and compute outside any transaction, then
// within one transaction lock the reservation, re-fetch and compare, run the in-transaction
// make, insert the rows, finish the job and complete it (the lock and the check under it go with
// BEGIN in one round trip: lockingBegin). A key already in the target (checked before compute,
// to spare it, and again under the job's lock, to decide) is settled without make
// (OutcomeInTarget).
func (e *Engine) makeAndCommit(ctx context.Context, r *reservation, complete CompleteFunc) (end End, err error) {
	defer recoverPanic(&err)
	t := r.table
	var fetched any
	var rows []Row
	// The check before the transaction only spares work done outside it: a table made by Make
	// alone has none, and the check under the job's lock decides for it (one round trip fewer).
	madeBefore := false
	if t.Fetch != nil || t.Compute != nil || t.FunctionURL != "" {
		if madeBefore, err = targetHas(ctx, r.conn, t, r.key); err != nil {
			return end, err
		}
	}
	if !madeBefore {
		if rows, fetched, err = e.fetchCompute(ctx, r); err != nil {
			return end, err
		}
	}
	begin := &lockingBegin{r: r}
	err = pgx.BeginFunc(ctx, begin, func(tx pgx.Tx) error {
		if begin.made {
			end = End{Outcome: OutcomeInTarget, Revived: r.revived}
			return finishAll(ctx, tx, e, r, complete, &end, keySkipped)
		}
		if madeBefore { // its target rows were deleted since: nothing was computed for them
			return fmt.Errorf("make %s key %v: target rows deleted during make: %w", t.Name, map[string]any(r.key), ErrInputChanged)
		}
		if err := refetch(ctx, tx, t, r.key, fetched); err != nil {
			return err
		}
		if t.Make != nil {
			more, err := t.Make(ctx, tx, r.key)
			if err != nil {
				return err
			}
			rows = append(rows, more...)
		}
		if err := insertRows(ctx, tx, t, r.key, rows); err != nil {
			return err
		}
		end = End{Outcome: OutcomeMade, Revived: r.revived}
		return finishAll(ctx, tx, e, r, complete, &end, keyMade)
	})
	return end, err
}

// fetchCompute runs the outside-the-transaction parts of r's make.
func (e *Engine) fetchCompute(ctx context.Context, r *reservation) (rows []Row, fetched any, err error) {
	t := r.table
	if t.Fetch != nil {
		if fetched, err = t.Fetch(ctx, r.conn, r.key); err != nil {
			return nil, nil, err
		}
	}
	rows, err = e.compute(ctx, t, r.key, fetched)
	return rows, fetched, err
}

// finishAll ends r's job as a success, counts it in the runs that hold it (outcome made, or
// skipped when the key was already in the target, in r's run; made elsewhere in the others) and
// completes its River job with end.
func finishAll(ctx context.Context, tx pgx.Tx, e *Engine, r *reservation, complete CompleteFunc, end *End, outcome string) error {
	ids, err := e.finishSuccessFindRuns(ctx, tx, r)
	if err != nil {
		return err
	}
	if end.Settled, err = e.settleRuns(ctx, tx, ids, r.by, r.table.Name, r.hash, outcome, nil, ""); err != nil {
		return err
	}
	return callComplete(ctx, tx, complete, *end)
}

// finishSuccessFindRuns finishes r's job (finishSuccess) and finds the runs that hold its key
// (RunIDsOfOpenKey, as settleKey would) in one round trip: neither statement reads what the
// other writes.
func (e *Engine) finishSuccessFindRuns(ctx context.Context, tx pgx.Tx, r *reservation) ([]int64, error) {
	b := &pgx.Batch{}
	if err := e.finishSuccess(ctx, queued{b}, r); err != nil {
		return nil, err
	}
	_, _ = queries.RunIDsOfOpenKey(ctx, queued{b}, dbsqlc.RunIDsOfOpenKeyParams{TableName: r.table.Name, KeyHash: r.hash})
	br := tx.SendBatch(ctx, b)
	_, err := br.Exec()
	if err != nil {
		err = fmt.Errorf("complete job %s/%s: %w", r.table.Name, r.hash, err)
	}
	var ids []int64
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			err = fmt.Errorf("find runs of %s/%s: %w", r.table.Name, r.hash, err)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return ids, err
}

func recoverPanic(err *error) {
	if p := recover(); p != nil {
		*err = &MakeError{Class: "panic", Message: fmt.Sprint(p), Stack: string(debug.Stack())}
	}
}

// compute runs the outside-the-transaction part: the Go Compute or the HTTP function.
func (e *Engine) compute(ctx context.Context, t *Table, key Key, fetched any) ([]Row, error) {
	switch {
	case t.FunctionURL != "":
		return e.callFunction(ctx, t, key)
	case t.Compute != nil:
		return t.Compute(ctx, key, fetched)
	}
	return nil, nil
}

// refetch fails with ErrInputChanged when the inputs read inside the transaction differ from
// those the rows were computed from.
func refetch(ctx context.Context, tx pgx.Tx, t *Table, key Key, fetched any) error {
	if t.Fetch == nil {
		return nil
	}
	again, err := t.Fetch(ctx, tx, key)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(fetched, again) {
		return fmt.Errorf("make %s key %v: %w", t.Name, map[string]any(key), ErrInputChanged)
	}
	return nil
}

// targetHas reports whether the target already holds key: then the job is simply completed.
func targetHas(ctx context.Context, q querier, t *Table, key Key) (bool, error) {
	var ok bool
	if err := q.QueryRow(ctx, targetHasSQL(t), key).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up key in %s: %w", t.Target, err)
	}
	return ok, nil
}

// insertRows inserts rows into the target, converting JSON values to the column types in
// Postgres. A row lacking a key column gets the key's value; a row with a different value fails.
func insertRows(ctx context.Context, tx pgx.Tx, t *Table, key Key, rows []Row) error {
	cols := map[string]bool{}
	for _, row := range rows {
		if err := fillKey(t, key, row); err != nil {
			return err
		}
		for c := range row {
			cols[c] = true
		}
	}
	if len(rows) == 0 {
		return nil
	}
	list := make([]string, 0, len(cols))
	for c := range cols {
		list = append(list, pgx.Identifier{c}.Sanitize())
	}
	slices.Sort(list)
	names := strings.Join(list, ", ")
	_, err := tx.Exec(ctx, `INSERT INTO `+t.target()+` (`+names+`) SELECT `+names+
		` FROM jsonb_populate_recordset(NULL::`+t.target()+`, $1::jsonb)`, rows)
	if err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", len(rows), t.Target, err)
	}
	return nil
}

func fillKey(t *Table, key Key, row Row) error {
	for _, c := range t.PrimaryKey {
		v, ok := row[c]
		if !ok {
			row[c] = key[c]
			continue
		}
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(key[c])
		if string(a) != string(b) {
			return fmt.Errorf("row of %s has %s = %s, but the key's is %s", t.Name, c, a, b)
		}
	}
	return nil
}

// MakeKey is the entry point of the River worker of populate_make jobs: reserve the job of hash
// in table, make it and finish it, calling complete inside the finishing transaction with how it
// ended, counting it in the populate run that asked (by) and in the others that hold the key. A
// key that is no longer scheduled (made or being made by another job, failed, ignored, cleaned
// up) is not made, unless opts.Retried and it is in error: then River UI's Retry makes it again;
// a run that asked counts such a key made elsewhere or skipped. A run that stopped taking keys
// (cancelled, failed, interrupted) has the key dropped without make and given back to the
// feeder; a running make is cut off when its run is cancelled. A job retried in River UI makes
// its key for the background, outside the run, which counted the key when the job first ended.
// It returns how the delivery ended separately from a failure to record anything.
func (e *Engine) MakeKey(ctx context.Context, by Asker, table, hash string, opts MakeOpts, complete CompleteFunc) (End, error) {
	run, ok := by.Run()
	if !ok || opts.Retried {
		return e.makeKey(ctx, Background, table, hash, opts, complete)
	}
	st, err := queries.RunGet(ctx, e.pool, run)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return End{}, fmt.Errorf("populate run %d: %w", run, err)
	}
	if err != nil || st.State != string(RunRunning) || st.Stopping != nil {
		var end End
		return end, pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			// The key's row before the run's: the lock order of every transaction that ends a key.
			if err := e.unfeed(ctx, tx, table, hash); err != nil {
				return err
			}
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
	return e.makeKey(ctx, by, table, hash, opts, complete)
}

// GiveUp ends a make job that spent its last attempt on an infrastructure error, in one
// transaction: the key, still scheduled, goes back to the feeder (unfeed), which leaves it to a
// running populate run that holds it; the run that asked (by) counts the key an error (stopping
// it as a make's error does, unless suppress_errors), so that it does not wait for a key no job
// will make; and end ends the River job (discarded with the same error). Without it River would
// discard the job outside any transaction of the key's: the key, marked enqueued, would wait for
// the reclaim sweep.
func (e *Engine) GiveUp(ctx context.Context, by Asker, table, hash string, job int64, cause error, end func(context.Context, pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if err := e.unfeed(ctx, tx, table, hash); err != nil { // the key's row before the run's
			return err
		}
		if run, ok := by.Run(); ok {
			msg := orphanMessage(job, "discarded", cause.Error())
			if _, err := e.settleRun(ctx, tx, run, table, hash, keyError, &msg, stopError); err != nil {
				return err
			}
		}
		return end(ctx, tx)
	})
}

func (e *Engine) makeKey(ctx context.Context, by Asker, table, hash string, opts MakeOpts, complete CompleteFunc) (End, error) {
	t, err := e.Table(ctx, table)
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
	run, forRun := by.Run()
	if forRun {
		meta["run_id"] = run
	}
	if opts.JobID != 0 {
		meta["river_job_id"] = opts.JobID
	}
	// A background make, not a River UI Retry, yields to a populate run holding the key.
	r, err := e.reserveKey(ctx, conn, t, hash, meta, opts.Retried, !forRun && !opts.Retried)
	if err != nil {
		return End{}, err
	}
	if r == nil {
		return e.skip(ctx, conn, by, t, hash, opts, complete)
	}
	r.held = held
	r.by = by
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

// ErrKeyBusy is returned for a run's make whose key was given back to scheduled (reclaimed)
// between its failed reservation and its look at the key: the River worker snoozes the job, and
// it reserves the key when it runs again, or finds another make holding it.
var ErrKeyBusy = errors.New("key scheduled again while its make job looked at it")

// skip ends the delivery of a make job whose key it could not reserve, saying why (skipNote). A
// run's make counts the key in its run: made elsewhere when another make made it, skipped when it
// needs no make for another reason, and, while another make holds it, waiting for that make's end
// (waitElsewhere). A background make of a key a populate run holds yields to the run (yieldToRun).
func (e *Engine) skip(ctx context.Context, conn *pgxpool.Conn, by Asker, t *Table, hash string, opts MakeOpts, complete CompleteFunc) (End, error) {
	var end End
	return end, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// Read under the row's lock, so that a make finishing the key now either ends first or
		// sees what this transaction writes (JobStatusLock).
		held, err := queries.JobStatusLock(ctx, tx, dbsqlc.JobStatusLockParams{TableName: t.Name, KeyHash: hash})
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("look at job %s/%s: %w", t.Name, hash, err)
		}
		run, forRun := by.Run()
		switch status := Status(held); {
		case forRun && status == StatusReserved:
			if end, err = e.waitElsewhere(ctx, tx, run, t, hash); err != nil {
				return err
			}
			return callComplete(ctx, tx, complete, end)
		case forRun && status == StatusScheduled:
			return ErrKeyBusy
		case !forRun && !opts.Retried && status == StatusScheduled:
			if end, err = e.yieldToRun(ctx, tx, t, hash); err != nil {
				return err
			}
			return callComplete(ctx, tx, complete, end)
		}
		note, status, err := skipNote(ctx, tx, t, hash, opts.Retried)
		if err != nil {
			return err
		}
		end = End{Outcome: OutcomeSkipped, Note: note}
		if !forRun {
			return callComplete(ctx, tx, complete, end)
		}
		outcome := keySkipped
		if status == StatusSuccess || status == "" {
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

// waitElsewhere leaves run's entry of the key of hash waiting for the make that holds it (another
// run's or the background's) and moves the run on to its next key: that make's end counts the
// key in the run, made elsewhere or skipped. The caller holds the key's job row.
func (e *Engine) waitElsewhere(ctx context.Context, tx pgx.Tx, run int64, t *Table, hash string) (End, error) {
	job, err := JobGet(ctx, tx, t.Name, hash)
	if err != nil {
		return End{}, err
	}
	by := fmt.Sprintf("key %s of %s is being made by another make job (connection %d)", hash, t.Name, job.ConnectionID)
	ids, err := queries.RunLockRunning(ctx, tx, []int64{run})
	if err != nil {
		return End{}, fmt.Errorf("lock populate run %d: %w", run, err)
	}
	n := int64(0)
	if len(ids) > 0 {
		if n, err = queries.RunKeyWait(ctx, tx, dbsqlc.RunKeyWaitParams{RunID: run, TableName: t.Name, KeyHash: hash}); err != nil {
			return End{}, fmt.Errorf("populate run %d: wait for %s/%s: %w", run, t.Name, hash, err)
		}
	}
	if n == 0 {
		return End{Outcome: OutcomeSkipped, Note: fmt.Sprintf("%s; populate run %d no longer waits for it", by, run)}, nil
	}
	end := End{Outcome: OutcomeWaiting, Note: fmt.Sprintf("%s; populate run %d counts it when that make ends, "+
		"and moved on to its next key", by, run)}
	return end, e.advanceRun(ctx, tx, run, dbsqlc.RunTallyParams{})
}

// yieldToRun ends a background make of the scheduled key of hash that a running populate run, not
// stopping, holds (JobReserve left it to the run): the run makes the key itself, which stays
// marked enqueued, and moves on, in case it waited for nothing else. A key no such run holds any
// more (it stopped or ended meanwhile) goes back to the feeder. The caller holds the key's job row.
func (e *Engine) yieldToRun(ctx context.Context, tx pgx.Tx, t *Table, hash string) (End, error) {
	held, err := queries.RunHoldingKey(ctx, tx, dbsqlc.RunHoldingKeyParams{TableName: t.Name, KeyHash: hash})
	if errors.Is(err, pgx.ErrNoRows) {
		return End{Outcome: OutcomeSkipped, Note: fmt.Sprintf("key %s of %s was left to a populate run that stopped since; "+
			"it was given back to the feeder", hash, t.Name)}, e.unfeed(ctx, tx, t.Name, hash)
	}
	if err != nil {
		return End{}, fmt.Errorf("find the populate run of %s/%s: %w", t.Name, hash, err)
	}
	end := End{Outcome: OutcomeYielded, Note: fmt.Sprintf("populate run %d holds key %s of %s and makes it itself", held.RunID, hash, t.Name)}
	if held.State != keyPending {
		return end, nil
	}
	return end, e.advanceRun(ctx, tx, held.RunID, dbsqlc.RunTallyParams{})
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

// Outcome is what one delivery of a make job did with its key.
type Outcome string

// The outcomes of a make job's delivery. Made, InTarget, Error and Cancelled record the key's
// outcome in the jobs table; Skipped and Dropped record nothing of the key's (a run's entry at
// most).
const (
	// OutcomeMade: make ran, its rows were inserted and the key's job finished.
	OutcomeMade Outcome = "made"
	// OutcomeInTarget: the key was already in the target when its make began (a schedule whose
	// snapshot predates a make's commit scheduled it again); its job was settled without make.
	OutcomeInTarget Outcome = "already_in_target"
	// OutcomeError: make failed and the key's job records the error.
	OutcomeError Outcome = "error"
	// OutcomeCancelled: make was cut off by River UI's Cancel and the key's job records the
	// interrupt as an error, as DataJoint records a KeyboardInterrupt.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeSkipped: the key was not the job's to make (made, being made, failed or ignored
	// under another job, cleaned up); End.Note says which and what to do instead.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeDropped: the key's populate run had stopped taking keys; it was dropped from the run
	// without make.
	OutcomeDropped Outcome = "dropped"
	// OutcomeWaiting: a run's make found its key being made by another make job; the run counts
	// the key when that make ends and moved on to its next key.
	OutcomeWaiting Outcome = "waiting_for_other_make"
	// OutcomeYielded: a background make's key is held by a running populate run, which makes it.
	OutcomeYielded Outcome = "yielded_to_run"
)

// End is how a delivery of a make job ended. CompleteFunc receives it inside the transaction
// that records it, so that the River job ends with it; MakeKey returns it.
type End struct {
	Outcome Outcome
	// Err is make's error for OutcomeError and OutcomeCancelled, as the jobs table records it.
	Err error
	// Note says, for OutcomeSkipped and OutcomeDropped, why the key was not made and what to do
	// instead, naming the API route.
	Note string
	// Settled counts the populate runs' entries of the key that the delivery settled.
	Settled int
	// Revived is true when the key was in error and the delivery, a Retry, made it again.
	Revived bool
}

// String says what the delivery did, for a log line.
func (e End) String() string {
	s := string(e.Outcome)
	if e.Revived {
		s += " (its error cleared and made again)"
	}
	switch {
	case e.Err != nil:
		s += ": " + e.Err.Error()
	case e.Note != "":
		s += ": " + e.Note
	}
	return s
}

// MakeOpts is what the River worker knows of the make job it runs.
type MakeOpts struct {
	// JobID is the River job's id, recorded in the key's run_metadata (river_job_id); zero when
	// no River job asks (benchmarks, tests).
	JobID int64
	// Retried is true when the job had ended before (it carries the output of that end) and is
	// delivered again, which only River UI's Retry does: a key in error is then made again.
	Retried bool
}

// CompleteFunc runs inside the transaction that records a make job's delivery (the key's
// success, error or interrupt, a run's entry, or nothing for a skip) with how it ended: the River
// worker ends its River job there, so that River UI and the jobs table agree once it commits. It
// is the transaction's last statement: a setting it makes with SET LOCAL holds for it alone.
type CompleteFunc func(ctx context.Context, tx pgx.Tx, end End) error

func callComplete(ctx context.Context, tx pgx.Tx, complete CompleteFunc, end End) error {
	if complete == nil {
		return nil
	}
	return complete(ctx, tx, end)
}

// skipNote says why the key of hash in table was not this make job's to make, from the key's job
// and the target as they are now, and what to do instead, with the key's job status ("" when it
// has no job any more).
func skipNote(ctx context.Context, db postgres.DBTX, t *Table, hash string, retried bool) (string, Status, error) {
	job, err := JobGet(ctx, db, t.Name, hash)
	if errors.Is(err, problem.ErrNotFound) {
		return noJobNote(t, hash), "", nil
	}
	if err != nil {
		return "", "", err
	}
	return jobNote(t, job, retried), job.Status, nil
}

func jobNote(t *Table, job Job, retried bool) string {
	hash := job.KeyHash
	reschedule := fmt.Sprintf("POST /v1/jobs/%s/%s/reschedule", t.Name, hash)
	switch job.Status {
	case StatusSuccess:
		return madeNote(t)
	case StatusReserved:
		return fmt.Sprintf("key %s of %s is being made by another make job (connection %d); nothing to do", hash, t.Name, job.ConnectionID)
	case StatusIgnore:
		return fmt.Sprintf("key %s of %s is ignored; use %s to make it", hash, t.Name, reschedule)
	case StatusError:
		msg := ""
		if job.ErrorMessage != nil {
			msg = *job.ErrorMessage
		}
		if retried { // a Retry reserves an error key: it was reserved and failed again meanwhile
			return fmt.Sprintf("key %s of %s failed again under another make job (%s); use %s to make it again", hash, t.Name, msg, reschedule)
		}
		return fmt.Sprintf("key %s of %s failed under another make job (%s); use %s, or Retry the job that failed, to make it again", hash, t.Name, msg, reschedule)
	}
	return fmt.Sprintf("key %s of %s was taken by another make job; nothing to do", hash, t.Name)
}

// noJobNote is skipNote for a key with no job: made by another make job (a made key's job is
// deleted unless KEEP_SUCCESS), or cleaned up after it left key_source. Telling the two apart
// would take a scan of key_source for the hash, too dear for a duplicate delivery.
func noJobNote(t *Table, hash string) string {
	return fmt.Sprintf("key %s of %s has no job any more: another make job made it, or it left key_source and was cleaned up; "+
		"nothing to do (to make it again, delete its rows from %s; POST /v1/tables/%s/schedule schedules what is missing)",
		hash, t.Name, t.Target, t.Name)
}

func madeNote(t *Table) string {
	return fmt.Sprintf("key already made in %s; nothing to redo (to make it again, delete its rows from %s, which schedules it; "+
		"POST /v1/tables/%s/schedule schedules what is missing)", t.Name, t.Target, t.Name)
}
