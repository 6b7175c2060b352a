package populate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
)

// ScheduleOpts tune one schedule_jobs call.
type ScheduleOpts struct {
	// Force reschedules keys whose job is in error or ignore.
	Force bool

	// Restriction limits scheduling to the key_source keys it matches (DataJoint #1244's
	// schedule_jobs(restriction)); the call still counts as the table's scheduling event.
	Restriction Restriction

	// MinInterval overrides Config.MinSchedulingInterval for this call when not nil; zero
	// schedules whatever the last event. A restricted call is never suppressed.
	MinInterval *time.Duration

	// Background marks a pass nobody asked for (an upstream insert's follow-up, the periodic
	// schedule): it schedules nothing for a table with auto_schedule false.
	Background bool
}

// ScheduleResult says what schedule_jobs did.
type ScheduleResult struct {
	// Scheduled counts the keys that became scheduled (new, or forced back from error/ignore).
	// With a restriction it counts every restricted key missing from the target whose job is
	// scheduled when the call commits, also those a background pass scheduled just before it:
	// the answer is exactly the restricted keys waiting for a make, whichever pass came first.
	Scheduled int `json:"scheduled"`

	// Suppressed is true when the call did nothing because a scheduling event of the table is
	// more recent than the minimum interval.
	Suppressed bool `json:"suppressed"`
}

// ScheduleJobs is DataJoint's schedule_jobs for the table registered as name: in one
// transaction it records a scheduling event (or stops if one is too recent, by the database
// clock), inserts a scheduled job for every key of key_source that is neither in the target (by
// primary key only) nor already scheduled, reserved or succeeded, restricted by
// opts.Restriction, and writes the table's feed job (unless one is waiting), which enqueues the
// keys' populate_make jobs as the makes drain (Feed). A bad restriction writes nothing.
func (e *Engine) ScheduleJobs(ctx context.Context, name string, opts ScheduleOpts) (ScheduleResult, error) {
	t, err := e.Table(ctx, name)
	if err != nil {
		return ScheduleResult{}, err
	}
	if opts.Background && !t.autoSchedule() {
		return ScheduleResult{}, nil // nothing to wait for: no background pass ever schedules it
	}
	f, err := opts.Restriction.compile(t, "restriction")
	if err != nil {
		return ScheduleResult{}, err
	}
	interval := e.cfg.MinSchedulingInterval
	if opts.MinInterval != nil {
		interval = *opts.MinInterval
	}
	if len(opts.Restriction) > 0 {
		interval = 0 // explicit beats background: a restricted call decides its keys itself
	}
	res, err := e.schedule(ctx, t, f, opts.Force, interval, false)
	if isJobConflict(err) {
		// A job of a key this call found missing was inserted meanwhile (an ignore, another
		// writer): the transaction is gone, so do it again, this time leaving such jobs alone.
		res, err = e.schedule(ctx, t, f, opts.Force, interval, true)
	}
	if err != nil {
		return ScheduleResult{}, fmt.Errorf("schedule jobs of %s: %w", name, err)
	}
	e.cfg.Metrics.ran(t.Name, "schedule", res.Suppressed, res.Scheduled)
	return res, nil
}

func (e *Engine) schedule(ctx context.Context, t *Table, f filter, force bool, interval time.Duration, conflicts bool) (ScheduleResult, error) {
	var res ScheduleResult
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		ok, err := claimEvent(ctx, tx, t.Name, "schedule", interval)
		if err != nil || !ok {
			res.Suppressed = !ok
			return err
		}
		cond, args := f.where("fresh.key", []any{t.Name, e.host, pid(), force})
		if err := tx.QueryRow(ctx, scheduleSQL(t, cond, conflicts, f.restricts()), args...).Scan(&res.Scheduled); err != nil {
			return fmt.Errorf("insert scheduled jobs: %w", err)
		}
		if res.Scheduled > 0 {
			// The state change and the job it triggers commit together: the feed job that will
			// enqueue these keys' makes.
			if _, err = e.ensureFeed(ctx, tx, t.Name); err != nil {
				return err
			}
		}
		return recordEventKeys(ctx, tx, t.Name, "schedule", res.Scheduled)
	})
	return res, err
}

// scheduleSQL is the set-based statement, parameters $1 to $4 as schedule passes them and cond's
// after them. Of key_source minus the target (fresh, restricted by cond), it inserts a scheduled
// job for each key that has none and, when forced ($4), makes error and ignore jobs scheduled
// again; every other existing job is left alone. Each key it schedules is written with enqueued
// false: its populate_make job is the feeder's to enqueue (Feed), so that a million keys cost a
// million jobs rows and not also a million River jobs with their five indexes. It returns their
// count.
//
// New jobs are a plain INSERT of the keys found missing, not INSERT … ON CONFLICT: speculative
// insertion probes the primary key once more and writes one more WAL record per row, which made
// the jobs table's part of a million keys a third slower. A job inserted meanwhile by another
// transaction then fails the statement with a unique violation; with conflicts the statement
// skips such keys instead (ScheduleJobs runs it so when the plain one failed that way). fresh is
// not materialized: the revived branch, whose $4 is false unless forced, never reads it. The
// OFFSET 0 keeps todo a subquery of its own, so that each key's jsonb is built once: flattened
// into the statement, the key expression was computed again for the key hash and for the row
// inserted, which took half the time of the statement's reading side over a million keys.
//
// With waiting (a restricted call) the count adds the restricted keys whose job was already
// scheduled (the statement's snapshot, which its own inserts are not part of).
func scheduleSQL(t *Table, cond string, conflicts, waiting bool) string {
	already := ""
	if waiting {
		already = ` + (SELECT count(*) FROM fresh JOIN jobs x ON x.table_name = $1 AND x.key_hash = fresh.key_hash
		    WHERE ` + cond + ` AND x.status = 'scheduled')`
	}
	onConflict := ""
	if conflicts {
		onConflict = "ON CONFLICT (table_name, key_hash) DO NOTHING"
	}
	return `WITH fresh AS NOT MATERIALIZED (SELECT md5(key::text) AS key_hash, key FROM (` + todoSQL(t) + ` OFFSET 0) todo),
	inserted AS (
		INSERT INTO jobs (table_name, key_hash, status, key, host, pid, run_metadata, enqueued)
		SELECT $1, key_hash, 'scheduled', key, $2, $3, NULL, false FROM fresh
		WHERE ` + cond + ` AND NOT EXISTS (SELECT 1 FROM jobs x WHERE x.table_name = $1 AND x.key_hash = fresh.key_hash)
		` + onConflict + `
		RETURNING 1),
	revived AS (
		UPDATE jobs j SET status = 'scheduled', error_message = NULL, error_stack = NULL, "user" = current_user,
		    host = $2, pid = $3, connection_id = pg_backend_pid(), "timestamp" = now(), enqueued = false
		FROM fresh
		WHERE $4 AND ` + cond + ` AND j.table_name = $1 AND j.key_hash = fresh.key_hash AND j.status IN ('error', 'ignore')
		RETURNING 1)
	SELECT (SELECT count(*) FROM inserted) + (SELECT count(*) FROM revived)` + already
}

// isJobConflict reports whether err is a unique violation of the jobs table's primary key.
func isJobConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "jobs_pkey"
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
