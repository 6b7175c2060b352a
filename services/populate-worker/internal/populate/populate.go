package populate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
	"drover.dev/shared/tracing"
)

// Populate is DataJoint's populate for the table registered as name, as a run: it schedules
// (unless told not to), records a run holding the matching scheduled keys in order, and hands
// the first opts.Processes of them to River as populate_make jobs of the run (enqueueRunMakes), in
// one transaction. The run goes on in River's workers on any replica; follow it with GetRun.
func (e *Engine) Populate(ctx context.Context, name string, opts Opts) (Run, error) {
	t, err := e.Table(ctx, name)
	if err != nil {
		return Run{}, err
	}
	f, err := opts.validate(t)
	if err != nil {
		return Run{}, err
	}
	switch {
	case !opts.ReserveJobs:
		zero := time.Duration(0)
		if _, err := e.ScheduleJobs(ctx, name, ScheduleOpts{Restriction: opts.Restriction, MinInterval: &zero}); err != nil {
			return Run{}, err
		}
	case !opts.SkipSchedule:
		if err := e.scheduleForRun(ctx, t.Name, opts.ScheduleInterval); err != nil {
			return Run{}, err
		}
	}
	options, err := json.Marshal(opts.view())
	if err != nil {
		return Run{}, fmt.Errorf("populate %s: %w", name, err)
	}
	ctx, span := tracer.Start(ctx, "populate "+t.Name)
	defer span.End()
	var id int64
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if id, err = queries.RunInsert(ctx, tx, dbsqlc.RunInsertParams{
			TableName: t.Name, Options: options, Processes: int32(opts.Processes), SuppressErrors: opts.SuppressErrors,
			TraceParent: tracing.Parent(ctx), // the run is continued from its row
		}); err != nil {
			return fmt.Errorf("record run: %w", err)
		}
		n, err := e.takeKeys(ctx, tx, id, t, f, opts)
		if err != nil {
			return err
		}
		if err := queries.RunSetTotal(ctx, tx, dbsqlc.RunSetTotalParams{Total: n, ID: id}); err != nil {
			return fmt.Errorf("record run: %w", err)
		}
		return e.advanceRun(ctx, tx, id, dbsqlc.RunTallyParams{})
	})
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return Run{}, fmt.Errorf("populate %s: %w", name, err)
	}
	span.SetAttributes(attribute.Int64("populate.run_id", id))
	return e.GetRun(ctx, id)
}

// scheduleForRun is the schedule_jobs call that precedes a reserved run, rate-limited by interval
// (the configured min_scheduling_interval when nil) as DataJoint's is, so that many callers do not
// all run key_source at once. A call suppressed while an upstream change waits for its schedule
// (a populate_schedule job of the table snoozed by the same interval) schedules anyway: rows
// inserted just before the run are the run's to make, not the background's a moment later.
func (e *Engine) scheduleForRun(ctx context.Context, table string, interval *time.Duration) error {
	res, err := e.ScheduleJobs(ctx, table, ScheduleOpts{MinInterval: interval})
	if err != nil || !res.Suppressed {
		return err
	}
	waiting, err := queries.JobOfTableWaiting(ctx, e.pool, dbsqlc.JobOfTableWaitingParams{TableName: table, Kind: queue.PopulateScheduleArgs{}.Kind()})
	if err != nil {
		return fmt.Errorf("look for the schedule job of %s: %w", table, err)
	}
	if !waiting {
		return nil
	}
	now := time.Duration(0)
	_, err = e.ScheduleJobs(ctx, table, ScheduleOpts{MinInterval: &now})
	return err
}

// takeKeys records the scheduled keys of t matching f as the run's keys, in opts.Order, at most
// opts.MaxCalls, and takes them from the feeder: the run makes them. The statement is built here because the restriction's condition and the order
// are chosen at run time; the restriction's values are parameters.
func (e *Engine) takeKeys(ctx context.Context, tx pgx.Tx, run int64, t *Table, f filter, opts Opts) (int64, error) {
	cond, args := f.where("key", []any{run, t.Name})
	ob := map[Order][2]string{
		OrderOriginal: {"key", "s.key"}, OrderReverse: {"key DESC", "s.key DESC"}, OrderRandom: {"o", "s.o"},
	}[opts.Order]
	limit := ""
	if opts.MaxCalls > 0 {
		limit = fmt.Sprintf(" LIMIT %d", opts.MaxCalls)
	}
	rows, err := tx.Query(ctx, `INSERT INTO populate_run_keys (run_id, seq, table_name, key_hash, key)
		SELECT $1, (row_number() OVER (ORDER BY `+ob[1]+`) - 1)::int, s.table_name, s.key_hash, s.key
		FROM (SELECT table_name, key_hash, key, random() AS o FROM jobs
			WHERE table_name = $2 AND status = 'scheduled' AND `+cond+` ORDER BY `+ob[0]+limit+`) s
		RETURNING key_hash::text`, args...)
	if err != nil {
		return 0, fmt.Errorf("take keys of %s: %w", t.Name, err)
	}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("take keys of %s: %w", t.Name, err)
	}
	// Marked enqueued, the keys are left to the run by the feeder (rows locked at this instant
	// are left: a make that starts on one yields). By primary key, a chunk at a time.
	const chunk = 10_000
	for start := 0; start < len(hashes); start += chunk {
		part := hashes[start:min(start+chunk, len(hashes))]
		if err := queries.MakesClaim(ctx, tx, dbsqlc.MakesClaimParams{TableName: t.Name, KeyHashes: part}); err != nil {
			return 0, fmt.Errorf("take keys of %s from the feeder: %w", t.Name, err)
		}
	}
	return int64(len(hashes)), nil
}
