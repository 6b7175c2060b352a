package populate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/problem"
)

// Ignore marks a key's job ignore, so that neither populate nor schedule_jobs (without force)
// touches it. A reserved job is being made and cannot be ignored. A key of key_source that has no
// job yet gets one in status ignore, as DataJoint's jobs.ignore inserts it.
func (e *Engine) Ignore(ctx context.Context, table, keyHash string) (Job, error) {
	job, err := e.setStatus(ctx, table, keyHash, StatusIgnore, ignorable())
	if !errors.Is(err, problem.ErrNotFound) {
		return job, err
	}
	t, err := e.tables.Get(table)
	if err != nil {
		return Job{}, err
	}
	return e.ignoreWhere(ctx, t, "md5(x.key::text) = $4", []any{t.Name, e.host, pid(), keyHash}, "key hash "+keyHash)
}

// IgnoreKey is DataJoint's jobs.ignore(key) for the table registered as name: key names every
// primary-key column with one value of its type, and must be a key of key_source (a job outside
// it would be removed by the next cleanup_jobs). Its job, existing or new, becomes ignore.
func (e *Engine) IgnoreKey(ctx context.Context, name string, key Restriction) (Job, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return Job{}, err
	}
	f, err := key.compile(t, "key")
	if err != nil {
		return Job{}, err
	}
	for _, c := range t.PrimaryKey {
		i := slices.Index(f.columns, c)
		if i < 0 {
			return Job{}, problem.Unprocessablef("key."+c, "required: a key names every primary-key column %v", t.PrimaryKey)
		}
		if len(f.values[i]) != 1 || len(key[c]) > 0 && key[c][0] == '[' {
			return Job{}, problem.Unprocessablef("key."+c, "must be one value, not a list")
		}
	}
	cond, args := f.where("x.key", []any{t.Name, e.host, pid()})
	return e.ignoreWhere(ctx, t, cond, args, fmt.Sprint(key))
}

func ignorable() []Status { return []Status{StatusScheduled, StatusError, StatusIgnore} }

// ignoreWhere makes the job of the key_source key matching cond (parameters args, the first three
// table name, host and pid) ignore, inserting it when it has none. A reserved job is a conflict.
func (e *Engine) ignoreWhere(ctx context.Context, t *Table, cond string, args []any, what string) (Job, error) {
	var job Job
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		var hash string
		err := tx.QueryRow(ctx, `WITH k AS (
				SELECT x.key, md5(x.key::text) AS key_hash FROM (`+t.keySourceKeys()+`) x WHERE `+cond+` LIMIT 1),
			ins AS (INSERT INTO jobs AS j (table_name, key_hash, status, key, host, pid, run_metadata)
				SELECT $1, k.key_hash, 'ignore', k.key, $2, $3, NULL FROM k
				ON CONFLICT (table_name, key_hash) DO UPDATE
					SET status = 'ignore', error_message = NULL, error_stack = NULL, "user" = current_user,
					    host = excluded.host, pid = excluded.pid, connection_id = pg_backend_pid(), "timestamp" = now()
					WHERE j.status IN ('scheduled', 'error', 'ignore'))
			SELECT key_hash FROM k`, args...).Scan(&hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%s of %s is neither a job nor a key of key_source: %w", what, t.Name, problem.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("ignore %s of %s: %w", what, t.Name, err)
		}
		if job, err = JobGet(ctx, tx, t.Name, hash); err != nil {
			return err
		}
		if job.Status != StatusIgnore {
			return problem.Conflictf("job %s/%s is %s; only %v jobs can become ignore", t.Name, hash, job.Status, ignorable())
		}
		return nil
	})
	return job, err
}
