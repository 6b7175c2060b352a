package populate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"drover.dev/queue"
	"drover.dev/shared/postgres"
)

// watch is what a change of one database table means for the computed tables.
type watch struct {
	upstreamOf []string // computed tables whose key_source reads it
	targetOf   []string // computed tables it is the target of
}

// InstallTriggers puts statement triggers on every upstream table (inserts, updates, deletes,
// truncates) and every target table (deletes, truncates) that notify populate_change. Statement
// triggers, not row triggers: a bulk insert of a million rows sends one notification.
func (e *Engine) InstallTriggers(ctx context.Context) error {
	for _, t := range e.tables.All() {
		for _, u := range t.Upstream {
			if err := createTrigger(ctx, e.pool, u, "populate_worker_upstream", "INSERT OR UPDATE OR DELETE OR TRUNCATE"); err != nil {
				return err
			}
		}
		if err := createTrigger(ctx, e.pool, t.Target, "populate_worker_target", "DELETE OR TRUNCATE"); err != nil {
			return err
		}
	}
	return nil
}

func createTrigger(ctx context.Context, db postgres.DBTX, table, name, events string) error {
	_, err := db.Exec(ctx, `CREATE OR REPLACE TRIGGER `+name+` AFTER `+events+` ON `+ident(table)+
		` FOR EACH STATEMENT EXECUTE FUNCTION populate_worker.notify_change()`)
	if err != nil {
		return fmt.Errorf("install trigger %s on %s: %w", name, table, err)
	}
	return nil
}

// watches maps each watched table's "<schema>.<relname>" (as triggers report it) to what its
// changes mean.
func (e *Engine) watches(ctx context.Context) (map[string]*watch, error) {
	out := map[string]*watch{}
	add := func(table string) (*watch, error) {
		qualified, err := queries.TableQualifiedName(ctx, e.pool, table)
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
			w, err := add(u)
			if err != nil {
				return nil, err
			}
			w.upstreamOf = append(w.upstreamOf, t.Name)
		}
		w, err := add(t.Target)
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
func (e *Engine) Listen(ctx context.Context, ins *queue.Client, flushEvery time.Duration) error {
	ws, err := e.watches(ctx)
	if err != nil {
		return err
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire listen connection: %w", err)
	}
	defer conn.Release()
	if err := queries.ChangeListen(ctx, conn); err != nil {
		return fmt.Errorf("listen on populate_change: %w", err)
	}
	pending := map[queue.PopulateScheduleArgs]bool{}
	for {
		waitCtx, cancel := context.WithTimeout(ctx, flushEvery)
		n, err := conn.Conn().WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
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
