package populate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/populate-worker/internal/populate/dbsqlc"
)

// ScheduleOpts tune one schedule_jobs call.
type ScheduleOpts struct {
	// Force reschedules keys whose job is in error or ignore.
	Force bool

	// Restriction limits scheduling to the key_source keys it matches (DataJoint #1244's
	// schedule_jobs(restriction)); the call still counts as the table's scheduling event.
	Restriction Restriction

	// MinInterval overrides Config.MinSchedulingInterval for this call when not nil; zero
	// schedules whatever the last event.
	MinInterval *time.Duration
}

// ScheduleResult says what schedule_jobs did.
type ScheduleResult struct {
	// Scheduled counts the keys that became scheduled (new, or forced back from error/ignore).
	Scheduled int `json:"scheduled"`

	// Suppressed is true when the call did nothing because a scheduling event of the table is
	// more recent than the minimum interval.
	Suppressed bool `json:"suppressed"`
}

// ScheduleJobs is DataJoint's schedule_jobs for the table registered as name: in one
// transaction it records a scheduling event (or stops if one is too recent, by the database
// clock), inserts a scheduled job for every key of key_source that is neither in the target (by
// primary key only) nor already scheduled, reserved or succeeded, restricted by
// opts.Restriction, and inserts each new job's River job. A bad restriction writes nothing.
func (e *Engine) ScheduleJobs(ctx context.Context, name string, opts ScheduleOpts) (ScheduleResult, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return ScheduleResult{}, err
	}
	f, err := opts.Restriction.compile(t, "restriction")
	if err != nil {
		return ScheduleResult{}, err
	}
	interval := e.cfg.MinSchedulingInterval
	if opts.MinInterval != nil {
		interval = *opts.MinInterval
	}
	var res ScheduleResult
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		ok, err := claimEvent(ctx, tx, t.Name, "schedule", interval)
		if err != nil || !ok {
			res.Suppressed = !ok
			return err
		}
		hashes, err := e.insertScheduled(ctx, tx, t, f, opts.Force)
		if err != nil {
			return err
		}
		res.Scheduled = len(hashes)
		if err := recordEventKeys(ctx, tx, t.Name, "schedule", len(hashes)); err != nil {
			return err
		}
		return e.enqueueMakes(ctx, tx, t.Name, hashes)
	})
	if err != nil {
		return ScheduleResult{}, fmt.Errorf("schedule jobs of %s: %w", name, err)
	}
	e.cfg.Metrics.ran(t.Name, "schedule", res.Suppressed, res.Scheduled)
	return res, nil
}

// scheduleSQL is the set-based statement: key_source minus target minus live jobs, restricted by
// cond (whose parameters follow $4). Conflicts with existing jobs update only error/ignore rows
// and only when forced; every other existing job is left alone and not returned.
func scheduleSQL(t *Table, cond string) string {
	return `WITH todo AS (` + todoSQL(t) + `)
	INSERT INTO jobs AS j (table_name, key_hash, status, key, host, pid, run_metadata)
	SELECT $1, md5(key::text), 'scheduled', key, $2, $3, NULL FROM todo WHERE ` + cond + `
	ON CONFLICT (table_name, key_hash) DO UPDATE
		SET status = 'scheduled', error_message = NULL, error_stack = NULL, "user" = current_user,
		    host = excluded.host, pid = excluded.pid, connection_id = pg_backend_pid(), "timestamp" = now()
		WHERE $4 AND j.status IN ('error', 'ignore')
	RETURNING key_hash`
}

func (e *Engine) insertScheduled(ctx context.Context, tx pgx.Tx, t *Table, f filter, force bool) ([]string, error) {
	cond, args := f.where("todo.key", []any{t.Name, e.host, pid(), force})
	rows, err := tx.Query(ctx, scheduleSQL(t, cond), args...)
	if err != nil {
		return nil, fmt.Errorf("insert scheduled jobs: %w", err)
	}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("insert scheduled jobs: %w", err)
	}
	return hashes, nil
}

// claimEvent records a scheduling event of kind for table unless the last one is more recent
// than interval by the database clock, and reports whether it did. The event row stays locked
// until the transaction ends, so concurrent callers queue behind it and then see it.
func claimEvent(ctx context.Context, tx pgx.Tx, table, kind string, interval time.Duration) (bool, error) {
	_, err := queries.SchedulingEventClaim(ctx, tx, dbsqlc.SchedulingEventClaimParams{TableName: table, Kind: kind, MinInterval: interval})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record %s event of %s: %w", kind, table, err)
	}
	return true, nil
}

func recordEventKeys(ctx context.Context, tx pgx.Tx, table, kind string, n int) error {
	err := queries.SchedulingEventSetKeys(ctx, tx, dbsqlc.SchedulingEventSetKeysParams{Keys: int64(n), TableName: table, Kind: kind})
	if err != nil {
		return fmt.Errorf("record %s event of %s: %w", kind, table, err)
	}
	return nil
}

// todoSQL is key_source minus the target, matched on the primary key only, as column key.
func todoSQL(t *Table) string {
	return `SELECT ` + t.keyObject("s") + ` AS key FROM (` + t.KeySource + `) s
		WHERE NOT EXISTS (SELECT 1 FROM ` + t.target() + ` t WHERE ` + t.pkMatch("t", "s") + `)`
}
