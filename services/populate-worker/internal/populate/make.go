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
	"github.com/riverqueue/river"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
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
		e.cfg.Metrics.made(r.table.Name, r.hash, time.Since(start), nil)
	}
	if makeErr == nil || errors.Is(makeErr, ErrNotReserved) {
		return end, makeErr
	}
	end = End{Outcome: OutcomeError}
	if ctx.Err() != nil {
		makeErr = e.interruption(ctx, makeErr)
		if cancelledInRiverUI(ctx) {
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
		if end.Settled, err = e.settleKey(recordCtx, tx, r.run, r.table.Name, r.hash, keyError, &msg, stopFor(makeErr)); err != nil {
			return err
		}
		return callComplete(recordCtx, tx, complete, end)
	})
	if err == nil {
		e.cfg.Metrics.made(r.table.Name, r.hash, time.Since(start), makeErr)
	}
	return end, err
}

// cancelledInRiverUI reports whether ctx, a make job's, was cancelled by River UI's Cancel
// (River's JobCancel of a running job).
func cancelledInRiverUI(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely)
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
	case cancelledInRiverUI(ctx):
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
// skipped when the key was already in the target, in r's run; made elsewhere in the others) and completes its River job with end.
func finishAll(ctx context.Context, tx pgx.Tx, e *Engine, r *reservation, complete CompleteFunc, end *End, outcome string) error {
	ids, err := e.finishSuccessFindRuns(ctx, tx, r)
	if err != nil {
		return err
	}
	if end.Settled, err = e.settleRuns(ctx, tx, ids, r.run, r.table.Name, r.hash, outcome, nil, ""); err != nil {
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

// targetHasSQL is the statement of targetHas, whose one argument is the key.
func targetHasSQL(t *Table) string {
	return `SELECT EXISTS (SELECT 1 FROM ` + t.target() + ` t,
		jsonb_populate_record(NULL::` + t.target() + `, $1::jsonb) k WHERE ` + t.pkMatch("t", "k") + `)`
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
