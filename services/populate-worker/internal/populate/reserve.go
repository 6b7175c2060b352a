package populate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Order is the order populate takes keys in.
type Order string

// The orders DataJoint offers. Original is ascending key order.
const (
	OrderOriginal Order = "original"
	OrderReverse  Order = "reverse"
	OrderRandom   Order = "random"
)

// reservation is a key this worker reserved, on the connection that holds it. The connection's
// backend pid is the job's connection_id: while it lives the reservation is ours, and when the
// process dies with it the orphan sweep sees the connection gone.
type reservation struct {
	table   *Table
	hash    string
	key     Key
	conn    *pgxpool.Conn
	backend int64
	started time.Time
	meta    map[string]any
	// direct marks a key taken straight from key_source (populate without reserve_jobs): it has
	// no jobs row to lock or finish.
	direct bool
}

const reserveSet = `status = 'reserved', error_message = NULL, error_stack = NULL, "user" = current_user,
	host = $3, pid = $4, connection_id = pg_backend_pid(), "timestamp" = now(), run_duration = NULL,
	run_metadata = $5::jsonb || jsonb_build_object('lease_until', now() + $6::interval)`

// reserveKey reserves the scheduled job of hash. It is one UPDATE guarded by status = 'scheduled'
// and checked by its row count: of any number of concurrent callers exactly one gets the row
// (the others wait for its lock, re-check the status and update nothing).
func (e *Engine) reserveKey(ctx context.Context, conn *pgxpool.Conn, t *Table, hash string, meta map[string]any) (*reservation, error) {
	row := conn.QueryRow(ctx, `UPDATE jobs SET `+reserveSet+`
		WHERE table_name = $1 AND key_hash = $2 AND status = 'scheduled'
		RETURNING key_hash, key, connection_id`, t.Name, hash, e.host, pid(), meta, e.cfg.OrphanTimeout)
	return e.scanReservation(row, conn, t, meta)
}

// claimNext reserves the first scheduled job of t in order that matches f, skipping rows other
// workers are reserving at this instant, so that workers never queue behind each other's locks.
func (e *Engine) claimNext(ctx context.Context, conn *pgxpool.Conn, t *Table, f filter, order Order, meta map[string]any) (*reservation, error) {
	args := []any{t.Name, "", e.host, pid(), meta, e.cfg.OrphanTimeout}
	cond, args := f.where("c.key", args)
	dir := "ASC"
	if order == OrderReverse {
		dir = "DESC"
	}
	row := conn.QueryRow(ctx, `UPDATE jobs SET `+reserveSet+`
		WHERE table_name = $1 AND key_hash = (
			SELECT c.key_hash FROM jobs c
			WHERE c.table_name = $1 AND c.status = 'scheduled' AND $2 = '' AND `+cond+` -- $2 keeps reserveSet's numbering
			ORDER BY c.key `+dir+` LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING key_hash, key, connection_id`, args...)
	return e.scanReservation(row, conn, t, meta)
}

// scanReservation returns the reservation in row, or nil when nothing was reserved.
func (e *Engine) scanReservation(row pgx.Row, conn *pgxpool.Conn, t *Table, meta map[string]any) (*reservation, error) {
	r := &reservation{table: t, conn: conn, started: time.Now(), meta: meta}
	var raw []byte
	err := row.Scan(&r.hash, &raw, &r.backend)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reserve job of %s: %w", t.Name, err)
	}
	if r.key, err = scanKey(raw); err != nil {
		return nil, fmt.Errorf("reserve job %s/%s: %w", t.Name, r.hash, err)
	}
	return r, nil
}

// runMetadata is what a run records about itself: code version, worker, host, process and how
// the key was reached.
func (e *Engine) runMetadata(via string) map[string]any {
	return map[string]any{
		"version": e.version, "worker_id": e.cfg.WorkerID, "host": e.host,
		"pid": pid(), "via": via,
	}
}

// holdLease renews r's lease every third of the orphan timeout until ctx ends, on a pool
// connection (r.conn is busy running make).
func (e *Engine) holdLease(ctx context.Context, r *reservation) {
	tick := time.NewTicker(e.cfg.OrphanTimeout / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, _ = e.pool.Exec(ctx, `UPDATE jobs
			SET run_metadata = run_metadata || jsonb_build_object('lease_until', now() + $4::interval)
			WHERE table_name = $1 AND key_hash = $2 AND status = 'reserved' AND connection_id = $3`,
			r.table.Name, r.hash, r.backend, e.cfg.OrphanTimeout)
	}
}

// lockReservation locks r's job row on tx and checks it is still reserved by r's connection: a
// reservation reclaimed meanwhile (lease expired) must not commit, whoever holds the key now.
// tx may be on another connection (r's may have been closed by a cancelled query).
func lockReservation(ctx context.Context, tx pgx.Tx, r *reservation) error {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM jobs
		WHERE table_name = $1 AND key_hash = $2 AND status = 'reserved' AND connection_id = $3
		FOR UPDATE) x`, r.table.Name, r.hash, r.backend).Scan(&n)
	if err != nil {
		return fmt.Errorf("lock job %s/%s: %w", r.table.Name, r.hash, err)
	}
	if n != 1 {
		return fmt.Errorf("job %s/%s: %w", r.table.Name, r.hash, ErrNotReserved)
	}
	return nil
}

// finishSuccess deletes r's job, or keeps it as success with its duration.
func (e *Engine) finishSuccess(ctx context.Context, tx pgx.Tx, r *reservation) error {
	var err error
	if e.cfg.KeepSuccess {
		_, err = tx.Exec(ctx, `UPDATE jobs SET status = 'success', "timestamp" = now(), run_duration = $3,
			run_metadata = (run_metadata - 'lease_until') || $4::jsonb
			WHERE table_name = $1 AND key_hash = $2`, r.table.Name, r.hash, time.Since(r.started).Seconds(), r.meta)
	} else {
		_, err = tx.Exec(ctx, `DELETE FROM jobs WHERE table_name = $1 AND key_hash = $2`, r.table.Name, r.hash)
	}
	if err != nil {
		return fmt.Errorf("complete job %s/%s: %w", r.table.Name, r.hash, err)
	}
	return nil
}

// finishError records make's failure on r's job.
func finishError(ctx context.Context, tx pgx.Tx, r *reservation, makeErr error) error {
	msg, stack := describe(makeErr)
	_, err := tx.Exec(ctx, `UPDATE jobs SET status = 'error', error_message = $3, error_stack = $4,
		"timestamp" = now(), run_duration = $5, run_metadata = (run_metadata - 'lease_until') || $6::jsonb
		WHERE table_name = $1 AND key_hash = $2`, r.table.Name, r.hash, msg, stack,
		time.Since(r.started).Seconds(), r.meta)
	if err != nil {
		return fmt.Errorf("record error of job %s/%s: %w", r.table.Name, r.hash, err)
	}
	return nil
}
