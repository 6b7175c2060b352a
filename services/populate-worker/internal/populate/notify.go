package populate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
)

// watch is what a change of one database table means for the computed tables.
type watch struct {
	upstreamOf []string // computed tables whose key_source reads it
	targetOf   []string // computed tables it is the target of
}

// watches maps each watched table's "<schema>.<relname>" (as triggers report it) to what its
// changes mean. A table that no longer resolves (dropped since its computed table was defined)
// is left out with a warning, so that one broken definition does not stop every table's events.
func (e *Engine) watches(ctx context.Context) (map[string]*watch, error) {
	out := map[string]*watch{}
	add := func(computed, table string) (*watch, error) {
		qualified, err := queries.TableQualifiedName(ctx, e.pool, table)
		if errors.Is(err, pgx.ErrNoRows) {
			e.cfg.Metrics.warn("a watched table does not exist; its changes schedule nothing", "table", computed, "watched", table)
			return &watch{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("resolve table %s: %w", table, err)
		}
		if out[qualified] == nil {
			out[qualified] = &watch{}
		}
		return out[qualified], nil
	}
	for _, t := range e.tables.All() {
		for _, u := range t.Upstream {
			w, err := add(t.Name, u)
			if err != nil {
				return nil, err
			}
			w.upstreamOf = append(w.upstreamOf, t.Name)
		}
		w, err := add(t.Name, t.Target)
		if err != nil {
			return nil, err
		}
		w.targetOf = append(w.targetOf, t.Name)
	}
	return out, nil
}

// Listen holds a dedicated connection listening on populate_change until ctx ends, and turns the
// changes into populate_schedule jobs: inserts upstream schedule, deletes upstream or in the
// target also clean up. Changes are gathered and flushed every flushEvery; a job skipped as a
// duplicate of one already running stays pending for the next flush, so no change is lost to a
// schedule that started before it. The worker applies min_scheduling_interval on top.
//
// The same connection listens on populate_tables, where every change of a stored table's
// definition is announced: each is registered (or unregistered) at once, and the map of watched
// tables follows. Every stored table is read again once listening, since a change announced
// while no connection listened would otherwise be missed until the next restart.
func (e *Engine) Listen(ctx context.Context, ins *queue.Client, flushEvery time.Duration) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire listen connection: %w", err)
	}
	defer conn.Release()
	// Definitions first: the connection's last statement says it listens for changes, which is
	// what pg_stat_activity shows of it (the tests wait for it).
	if err := queries.TablesListen(ctx, conn); err != nil {
		return fmt.Errorf("listen on populate_tables: %w", err)
	}
	if err := queries.ChangeListen(ctx, conn); err != nil {
		return fmt.Errorf("listen on populate_change: %w", err)
	}
	if err := e.LoadTables(ctx); err != nil {
		return err
	}
	version := e.tables.Version()
	ws, err := e.watches(ctx)
	if err != nil {
		return err
	}
	pending := map[queue.PopulateScheduleArgs]bool{}
	for {
		if v := e.tables.Version(); v != version {
			version = v
			if ws, err = e.watches(ctx); err != nil {
				return err
			}
		}
		waitCtx, cancel := context.WithTimeout(ctx, flushEvery)
		n, err := conn.Conn().WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil && n.Channel == tablesChannel:
			if err := e.ReloadTable(ctx, n.Payload); err != nil {
				return err
			}
			continue
		case err == nil:
			for _, args := range followUps(ws, n.Payload) {
				pending[args] = true
			}
			continue
		case !errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("wait for populate_change: %w", err)
		}
		if err := flush(ctx, ins, pending); err != nil {
			return err
		}
	}
}

// tablesChannel is where a stored table's change is announced (TablesNotify).
const tablesChannel = "populate_tables"

// flush inserts the pending schedule jobs, keeping those River skipped as duplicates.
func flush(ctx context.Context, ins *queue.Client, pending map[queue.PopulateScheduleArgs]bool) error {
	for args := range pending {
		res, err := ins.Insert(ctx, args, nil)
		if err != nil {
			return fmt.Errorf("enqueue schedule of %s: %w", args.Table, err)
		}
		if !res.UniqueSkippedAsDuplicate {
			delete(pending, args)
		}
	}
	return nil
}

// followUps returns the schedule jobs a change notification calls for.
func followUps(ws map[string]*watch, payload string) []queue.PopulateScheduleArgs {
	table, op, _ := strings.Cut(payload, " ")
	w := ws[table]
	if w == nil {
		return nil
	}
	removes := op == "DELETE" || op == "TRUNCATE" || op == "UPDATE"
	var out []queue.PopulateScheduleArgs
	for _, name := range w.upstreamOf {
		out = append(out, queue.PopulateScheduleArgs{Table: name, Cleanup: removes})
	}
	if removes {
		for _, name := range w.targetOf {
			out = append(out, queue.PopulateScheduleArgs{Table: name, Cleanup: true})
		}
	}
	return out
}
