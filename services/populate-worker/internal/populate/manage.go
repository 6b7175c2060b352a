package populate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
	"drover.dev/shared/problem"
)

// Reschedule makes an error or ignore job scheduled again and enqueues its background make, in
// one transaction. The make waits Config.RescheduleGrace in River first: a populate run started
// meanwhile takes the key (the background make then yields to it) and shows its outcome.
func (e *Engine) Reschedule(ctx context.Context, table, keyHash string) (Job, error) {
	return e.setStatus(ctx, table, keyHash, StatusScheduled, []Status{StatusError, StatusIgnore})
}

func (e *Engine) setStatus(ctx context.Context, table, keyHash string, to Status, from []Status) (Job, error) {
	if _, err := e.Table(ctx, table); err != nil {
		return Job{}, err
	}
	var job Job
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		cur, err := JobGet(ctx, tx, table, keyHash)
		if err != nil {
			return err
		}
		if !slices.Contains(from, cur.Status) {
			return problem.Conflictf("job %s/%s is %s; only %v jobs can become %s", table, keyHash, cur.Status, from, to)
		}
		err = queries.JobSetStatus(ctx, tx, dbsqlc.JobSetStatusParams{
			Status: string(to), Host: e.host, Pid: pid(), TableName: table, KeyHash: keyHash,
		})
		if err != nil {
			return fmt.Errorf("set job %s/%s %s: %w", table, keyHash, to, err)
		}
		if to == StatusScheduled {
			if err := e.enqueueMakesAt(ctx, tx, table, Background, []string{keyHash}, time.Now().Add(e.cfg.RescheduleGrace)); err != nil {
				return err
			}
		}
		job, err = JobGet(ctx, tx, table, keyHash)
		return err
	})
	return job, err
}

// Ignore marks a key's job ignore, so that neither populate nor schedule_jobs (without force)
// touches it. A reserved job is being made and cannot be ignored. A key of key_source that has no
// job yet gets one in status ignore, as DataJoint's jobs.ignore inserts it.
func (e *Engine) Ignore(ctx context.Context, table, keyHash string) (Job, error) {
	job, err := e.setStatus(ctx, table, keyHash, StatusIgnore, ignorable())
	if !errors.Is(err, problem.ErrNotFound) {
		return job, err
	}
	t, err := e.Table(ctx, table)
	if err != nil {
		return Job{}, err
	}
	return e.ignoreWhere(ctx, t, "md5(x.key::text) = $4", []any{t.Name, e.host, pid(), keyHash}, "key hash "+keyHash)
}

// IgnoreKey is DataJoint's jobs.ignore(key) for the table registered as name: key names every
// primary-key column with one value of its type, and must be a key of key_source (a job outside
// it would be removed by the next cleanup_jobs). Its job, existing or new, becomes ignore.
func (e *Engine) IgnoreKey(ctx context.Context, name string, key Restriction) (Job, error) {
	t, err := e.Table(ctx, name)
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

// Progress is how far a computed table is: DataJoint's progress (remaining of total keys), its
// jobs by status, and how many of its scheduled jobs still wait for the feeder to enqueue their
// make (NotEnqueued: River shows those makes only once enqueued).
type Progress struct {
	Table       string           `json:"table"`
	Total       int64            `json:"total"`
	Remaining   int64            `json:"remaining"`
	Jobs        map[Status]int64 `json:"jobs"`
	NotEnqueued int64            `json:"not_enqueued"`
}

// Progress counts key_source keys and those still missing from the target, and the table's jobs
// by status, all restricted by r.
func (e *Engine) Progress(ctx context.Context, name string, r Restriction) (Progress, error) {
	t, err := e.Table(ctx, name)
	if err != nil {
		return Progress{}, err
	}
	f, err := r.compile(t, "restriction")
	if err != nil {
		return Progress{}, err
	}
	p := Progress{Table: t.Name, Jobs: map[Status]int64{}}
	for _, s := range Statuses() {
		p.Jobs[s] = 0
	}
	// One snapshot for both counts: read apart, a key made in between is still remaining while
	// its job is already gone, and a follower sees nothing pending with keys left to make.
	err = pgx.BeginTxFunc(ctx, e.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		cond, args := f.where("x.key", nil)
		if err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (`+t.keySourceKeys()+`) x WHERE `+cond+`),
			(SELECT count(*) FROM (`+todoSQL(t)+`) x WHERE `+cond+`)`, args...).Scan(&p.Total, &p.Remaining); err != nil {
			return fmt.Errorf("progress of %s: %w", name, err)
		}
		cond, args = f.where("key", []any{t.Name})
		rows, err := tx.Query(ctx, `SELECT status, count(*), count(*) FILTER (WHERE NOT enqueued) FROM jobs
			WHERE table_name = $1 AND `+cond+` GROUP BY status`, args...)
		if err != nil {
			return fmt.Errorf("count jobs of %s: %w", name, err)
		}
		var st Status
		var n, notEnqueued int64
		for rows.Next() {
			if err := rows.Scan(&st, &n, &notEnqueued); err != nil {
				rows.Close()
				return fmt.Errorf("count jobs of %s: %w", name, err)
			}
			p.Jobs[st] = n
			if st == StatusScheduled {
				p.NotEnqueued = notEnqueued
			}
		}
		return rows.Err()
	})
	return p, err
}
