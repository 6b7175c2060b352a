package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
	"drover.dev/shared/problem"
)

// RunState is a populate run's state.
type RunState string

// The states of a run. A run is running until its last queued make has ended; it then ends done
// (every key taken was made, failed with suppress_errors, or needed no make), failed (a make
// failed without suppress_errors, so the run took no more keys) or interrupted (cancelled, or a
// make was cut off by SIGTERM).
const (
	RunRunning     RunState = "running"
	RunDone        RunState = "done"
	RunInterrupted RunState = "interrupted"
	RunFailed      RunState = "failed"
)

// RunStates returns every run state.
func RunStates() []RunState { return []RunState{RunRunning, RunDone, RunInterrupted, RunFailed} }

// Why a running run stops taking keys (populate_runs.stopping).
const (
	stopCancel  = "cancel"
	stopSIGTERM = "sigterm"
	stopError   = "error"
)

// The states of a run's key (populate_run_keys.state). An open key is pending (not yet handed to
// River), queued (the run's make job waits or runs) or waiting (its make found another make
// holding the key, whose end counts it). The outcomes: made and error are those of the makes done
// for the run; a key made by another make that held it is made_elsewhere, and one another make
// failed is skipped, as DataJoint's populate counts only the makes of its call.
const (
	keyPending   = "pending"
	keyWaiting   = "waiting"
	keyMade      = "made"
	keyElsewhere = "made_elsewhere"
	keyError     = "error"
	keySkipped   = "skipped"
	keyDropped   = "dropped"
)

// elsewhere is what outcome, a make's for another run or the feeder, is in a run that held the
// key: a key made or found in the target was made elsewhere; a failure is not the run's.
func elsewhere(outcome string) string {
	if outcome == keyMade {
		return keyElsewhere
	}
	return keySkipped
}

// MaxRunErrors bounds the error_list a run shows; errors counts them all.
const MaxRunErrors = 1000

// RunError is one failed key of a run, as DataJoint's populate returns it in error_list.
type RunError struct {
	Key          Key    `json:"key"`
	KeyHash      string `json:"key_hash"`
	ErrorMessage string `json:"error_message"`
}

// Run is a populate run as the API shows it.
type Run struct {
	ID    int64    `json:"id"`
	Table string   `json:"table"`
	State RunState `json:"state"`
	// Stopping says why a run took no more keys: cancel, sigterm or error; null otherwise.
	Stopping *string  `json:"stopping"`
	Options  OptsView `json:"options"`
	// Total is the keys the run took; Made and Errors what the makes done for the run did with
	// them, MadeElsewhere those another make made (another run's, or a background make already
	// running when the run reached the key),
	// Skipped those that needed no make or failed under another make, Dropped those a stopped run
	// never handed to River, Queued those whose make is waiting or running, and Remaining those
	// not yet ended (queued or waiting their turn).
	Total         int64 `json:"total"`
	Made          int64 `json:"made"`
	SuccessCount  int64 `json:"success_count"`
	Errors        int64 `json:"errors"`
	MadeElsewhere int64 `json:"made_elsewhere"`
	Skipped       int64 `json:"skipped"`
	Dropped       int64 `json:"dropped"`
	Queued        int64 `json:"queued"`
	Remaining     int64 `json:"remaining"`
	// ErrorList is the failed keys in the run's order, at most MaxRunErrors.
	ErrorList []RunError `json:"error_list"`
	// Rate is keys ended (made or failed) per second since the run was created; ETASeconds is
	// Remaining at that rate, null when the run has ended or nothing has ended yet.
	Rate       float64    `json:"rate"`
	ETASeconds *float64   `json:"eta_seconds"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// GetRun returns run id.
func (e *Engine) GetRun(ctx context.Context, id int64) (Run, error) {
	r, err := queries.RunGet(ctx, e.pool, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Run{}, fmt.Errorf("populate run %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("get populate run %d: %w", id, err)
	}
	run, err := runOf(r)
	if err != nil {
		return Run{}, err
	}
	if r.Errors > 0 {
		rows, err := queries.RunErrorList(ctx, e.pool, dbsqlc.RunErrorListParams{RunID: id, MaxRows: MaxRunErrors})
		if err != nil {
			return Run{}, fmt.Errorf("errors of populate run %d: %w", id, err)
		}
		for _, row := range rows {
			k, err := scanKey(row.Key)
			if err != nil {
				return Run{}, err
			}
			run.ErrorList = append(run.ErrorList, RunError{Key: k, KeyHash: row.KeyHash, ErrorMessage: row.ErrorMessage})
		}
	}
	return run, nil
}

// WaitRun returns run id once it has ended, or as it is when ctx ends first. It reads the run's
// row every poll.
func (e *Engine) WaitRun(ctx context.Context, id int64, poll time.Duration) (Run, error) {
	for {
		run, err := e.GetRun(context.WithoutCancel(ctx), id)
		if err != nil || run.State != RunRunning {
			return run, err
		}
		select {
		case <-ctx.Done():
			return run, nil
		case <-time.After(poll):
		}
	}
}

// CancelRun stops run id taking keys, like Ctrl-C on DataJoint's populate: keys not yet handed
// to River are dropped (their jobs stay scheduled), queued makes that have not started complete
// without making, and makes running now are cut off and recorded as KeyboardInterrupt. The run
// ends interrupted once they have. Cancelling an ended run changes nothing.
func (e *Engine) CancelRun(ctx context.Context, id int64) (Run, error) {
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		_, err := queries.RunCancel(ctx, tx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // unknown (GetRun says so) or ended
		}
		if err != nil {
			return fmt.Errorf("cancel populate run %d: %w", id, err)
		}
		return e.advanceRun(ctx, tx, id, dbsqlc.RunTallyParams{})
	})
	if err != nil {
		return Run{}, err
	}
	return e.GetRun(ctx, id)
}

// advanceRun counts tally in run id (locking its row) and moves it on: a stopping run drops its
// pending and waiting keys (giving them back to the feeder) and the queued ones whose make has not
// started; a taking one hands its next free keys to River until processes are queued; a run with
// no key left open ends. A run whose open keys are all being made elsewhere takes no process: the
// end of those makes settles them and moves it on.
func (e *Engine) advanceRun(ctx context.Context, tx pgx.Tx, id int64, tally dbsqlc.RunTallyParams) error {
	tally.ID = id
	row, err := queries.RunTally(ctx, tx, tally)
	if err != nil {
		return fmt.Errorf("count in populate run %d: %w", id, err)
	}
	if row.Stopping != nil {
		if err := e.dropOpen(ctx, tx, id, row.TableName); err != nil {
			return err
		}
	}
	n, err := queries.RunOpenCount(ctx, tx, id)
	if err != nil {
		return fmt.Errorf("count open keys of populate run %d: %w", id, err)
	}
	if row.Stopping == nil && n.Queued < int64(row.Processes) && n.Open > 0 {
		take := row.Processes - int32(n.Queued)
		next, err := queries.RunKeysQueueNext(ctx, tx, dbsqlc.RunKeysQueueNextParams{RunID: id, MaxKeys: take, WindowKeys: queueWindow(take)})
		if err != nil {
			return fmt.Errorf("queue keys of populate run %d: %w", id, err)
		}
		if err := e.queueNext(ctx, tx, id, next); err != nil {
			return err
		}
		n.Queued += int64(len(next))
		n.Open -= int64(len(next))
	}
	if n.Queued+n.Open > 0 {
		return nil
	}
	state := RunDone
	if row.Stopping != nil {
		state = map[string]RunState{stopCancel: RunInterrupted, stopSIGTERM: RunInterrupted, stopError: RunFailed}[*row.Stopping]
	}
	if err := queries.RunFinish(ctx, tx, dbsqlc.RunFinishParams{State: string(state), ID: id}); err != nil {
		return fmt.Errorf("end populate run %d: %w", id, err)
	}
	return nil
}

// queueWindow is how many of a run's next free keys RunKeysQueueNext looks over to take n of
// them, preferring those no other run has queued: enough that two or three runs over the same
// keys find one each, few enough that each look costs a few index reads.
func queueWindow(n int32) int32 { return 4*n + 16 }

// dropOpen drops, in stopping run id of table, the keys not handed to River and those waiting
// for another make, and the queued ones whose make has not started (that make gives its key back
// when it runs). The keys the run took from the feeder and never handed to River go back to it
// (MakesGiveBack), with a feed job waiting for the table.
func (e *Engine) dropOpen(ctx context.Context, tx pgx.Tx, id int64, table string) error {
	dropped, err := queries.RunDropPending(ctx, tx, id)
	if err != nil {
		return fmt.Errorf("drop keys of populate run %d: %w", id, err)
	}
	if err := queries.RunDropUnstarted(ctx, tx, id); err != nil {
		return fmt.Errorf("drop keys of populate run %d: %w", id, err)
	}
	if len(dropped) == 0 {
		return nil
	}
	n, err := queries.MakesGiveBack(ctx, tx, dbsqlc.MakesGiveBackParams{TableName: table, KeyHashes: dropped})
	if err != nil {
		return fmt.Errorf("give the keys of populate run %d back to the feeder: %w", id, err)
	}
	if n > 0 {
		_, err = e.ensureFeed(ctx, tx, table)
	}
	return err
}

// queueNext hands keys (RunKeysQueueNext) of run to River in the run's order (enqueueRunMakes).
func (e *Engine) queueNext(ctx context.Context, tx pgx.Tx, run int64, keys []dbsqlc.RunKeysQueueNextRow) error {
	if len(keys) == 0 {
		return nil
	}
	r, err := queries.RunTable(ctx, tx, run)
	if err != nil {
		return fmt.Errorf("populate run %d: %w", run, err)
	}
	slices.SortFunc(keys, func(a, b dbsqlc.RunKeysQueueNextRow) int { return int(a.Seq - b.Seq) })
	hashes := make([]string, len(keys))
	for i, k := range keys {
		hashes[i] = k.KeyHash
	}
	return e.enqueueRunMakes(inRunTrace(ctx, r.TraceParent, keys[0].Seq), tx, run, r.TableName, hashes)
}

// settleKey records, in the transaction that ends a key's make (or finds it needs none), the
// outcome in every running run that holds the key still open (pending, queued or waiting), moves those runs on
// and returns how many entries it settled: the run that asked for the make (by) counts outcome
// and may stop for stop; the others count elsewhere(outcome) and never stop. It
// costs one index lookup when no run holds the key.
func (e *Engine) settleKey(ctx context.Context, tx pgx.Tx, by Asker, table, hash, outcome string, msg *string, stop string) (int, error) {
	ids, err := queries.RunIDsOfOpenKey(ctx, tx, dbsqlc.RunIDsOfOpenKeyParams{TableName: table, KeyHash: hash})
	if err != nil {
		return 0, fmt.Errorf("find runs of %s/%s: %w", table, hash, err)
	}
	return e.settleRuns(ctx, tx, ids, by, table, hash, outcome, msg, stop)
}

// settleRun is settleKey in run alone, the run the make was done for.
func (e *Engine) settleRun(ctx context.Context, tx pgx.Tx, run int64, table, hash, outcome string, msg *string, stop string) (int, error) {
	return e.settleRuns(ctx, tx, []int64{run}, ForRun(run), table, hash, outcome, msg, stop)
}

// settleRuns is settleKey in the runs ids (those of RunIDsOfOpenKey, or one run).
func (e *Engine) settleRuns(ctx context.Context, tx pgx.Tx, ids []int64, by Asker, table, hash, outcome string, msg *string, stop string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	ids, err := queries.RunLockRunning(ctx, tx, ids)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	others := slices.DeleteFunc(slices.Clone(ids), by.is)
	var rows []dbsqlc.RunKeysResolveRow
	if own, ok := by.Run(); ok && len(others) < len(ids) {
		if rows, err = e.resolveRunKeys(ctx, tx, []int64{own}, table, hash, outcome, msg); err != nil {
			return 0, err
		}
	}
	if len(others) > 0 {
		more, err := e.resolveRunKeys(ctx, tx, others, table, hash, elsewhere(outcome), nil)
		if err != nil {
			return 0, err
		}
		rows = append(rows, more...)
	}
	slices.SortFunc(rows, func(a, b dbsqlc.RunKeysResolveRow) int { return int(a.RunID - b.RunID) })
	for _, r := range rows {
		tally := dbsqlc.RunTallyParams{}
		state := outcome
		if by.is(r.RunID) {
			tally.Stop = stop
		} else {
			state = elsewhere(outcome)
		}
		switch state {
		case keyMade:
			tally.Made = 1
		case keyElsewhere:
			tally.MadeElsewhere = 1
		case keyError:
			tally.Errors = 1
		case keySkipped:
			tally.Skipped = 1
		case keyDropped:
			tally.Dropped = 1
		}
		if err := e.advanceRun(ctx, tx, r.RunID, tally); err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}

func (e *Engine) resolveRunKeys(ctx context.Context, tx pgx.Tx, ids []int64, table, hash, state string, msg *string) ([]dbsqlc.RunKeysResolveRow, error) {
	rows, err := queries.RunKeysResolve(ctx, tx, dbsqlc.RunKeysResolveParams{
		State: state, ErrorMessage: msg, RunIds: ids, TableName: table, KeyHash: hash,
	})
	if err != nil {
		return nil, fmt.Errorf("settle %s/%s in its runs: %w", table, hash, err)
	}
	return rows, nil
}

// stopFor is the reason a make's error stops its runs: DataJoint's populate ends on SystemExit
// and KeyboardInterrupt whatever suppress_errors says, and on other errors without it. A make
// cancelled in River UI is that key's interrupt, not its run's: it stops the run as an error
// does (POST /v1/populate-runs/{id}/cancel cancels a whole run).
func stopFor(makeErr error) string {
	var me *MakeError
	if errors.As(makeErr, &me) {
		switch {
		case me.Class == classSystemExit:
			return stopSIGTERM
		case me.Class == classKeyboardInterrupt && me.Message == messageRiverUICancel:
			return stopError
		case me.Class == classKeyboardInterrupt:
			return stopCancel
		}
	}
	return stopError
}

// WatchRuns cuts off this process's makes of cancelled runs until ctx ends, looking every
// interval (one indexed query, only while runs' makes are running here).
func (e *Engine) WatchRuns(ctx context.Context, every time.Duration) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		ids := e.watch.runs()
		if len(ids) == 0 {
			continue
		}
		cancelled, err := queries.RunsCancelled(ctx, e.pool, ids)
		if err != nil {
			continue // the next tick tries again
		}
		for _, id := range cancelled {
			e.watch.cancel(id)
		}
	}
}

// RunFilter picks the runs ListRuns returns: those of Table and in State (every one when empty),
// with ids below Before (0: from the newest), at most Limit.
type RunFilter struct {
	Table  string
	State  RunState
	Before int64
	Limit  int
}

// ListRuns returns populate runs newest first, as GetRun shows them but with an empty
// error_list: a run's failed keys are read one run at a time.
func (e *Engine) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	rows, err := queries.RunList(ctx, e.pool, dbsqlc.RunListParams{
		Before: f.Before, TableName: f.Table, State: string(f.State), MaxRows: int32(f.Limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list populate runs: %w", err)
	}
	runs := make([]Run, 0, len(rows))
	for _, r := range rows {
		run, err := runOf(dbsqlc.RunGetRow(r))
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// runOf is a run's row as the API shows it, without its error_list: its counts, and its rate
// and ETA as of the database's clock.
func runOf(r dbsqlc.RunGetRow) (Run, error) {
	run := Run{
		ID: r.ID, Table: r.TableName, State: RunState(r.State), Stopping: r.Stopping, Total: r.Total,
		Made: r.Made, SuccessCount: r.Made, Errors: r.Errors, MadeElsewhere: r.MadeElsewhere, Skipped: r.Skipped,
		Dropped: r.Dropped, Queued: r.Queued, Remaining: r.Total - r.Made - r.Errors - r.MadeElsewhere - r.Skipped - r.Dropped, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt,
		ErrorList: []RunError{},
	}
	if err := json.Unmarshal(r.Options, &run.Options); err != nil {
		return Run{}, fmt.Errorf("populate run %d options: %w", r.ID, err)
	}
	end := r.Now
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	if secs := end.Sub(r.CreatedAt).Seconds(); secs > 0 {
		run.Rate = float64(r.Made+r.Errors) / secs
	}
	if run.State == RunRunning && run.Rate > 0 {
		eta := float64(run.Remaining) / run.Rate
		run.ETASeconds = &eta
	}
	return run, nil
}
