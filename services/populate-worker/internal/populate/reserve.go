package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
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
	// by is who asked for the make: a populate run, or the background (also a Retry's).
	by Asker
	// revived is true when the key was in error and reserved to be made again (a Retry).
	revived bool
	// held releases conn once, early when a failed make broke it.
	held *heldConn
}

// heldConn is a pool connection given back exactly once.
type heldConn struct {
	conn *pgxpool.Conn
	done bool
}

func (h *heldConn) release() {
	if h != nil && !h.done {
		h.done = true
		h.conn.Release()
	}
}

func (h *heldConn) released() bool { return h == nil || h.done }

// reserveKey reserves the scheduled job of hash, or with revive its error job (JobReserve); with
// yield (a background make) not one a running populate run holds, which the run makes.
func (e *Engine) reserveKey(ctx context.Context, conn *pgxpool.Conn, t *Table, hash string, meta map[string]any, revive, yield bool) (*reservation, error) {
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("reserve job %s/%s: %w", t.Name, hash, err)
	}
	row, err := queries.JobReserve(ctx, conn, dbsqlc.JobReserveParams{
		Host: e.host, Pid: pid(), RunMetadata: metaJSON, Lease: e.cfg.OrphanTimeout, TableName: t.Name, KeyHash: hash, Revive: revive, Yield: yield,
	})
	return e.reserved(row, err, conn, t, meta)
}

// reserved returns the reservation a reserving statement returned (row, or its error), or nil
// when it reserved nothing.
func (e *Engine) reserved(row dbsqlc.JobReserveRow, err error, conn *pgxpool.Conn, t *Table, meta map[string]any) (*reservation, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reserve job of %s: %w", t.Name, err)
	}
	r := &reservation{table: t, hash: row.KeyHash, conn: conn, backend: row.ConnectionID, started: time.Now(), meta: meta, revived: row.Revived}
	if r.key, err = scanKey(row.Key); err != nil {
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
		_ = queries.JobLeaseExtend(ctx, e.pool, dbsqlc.JobLeaseExtendParams{
			Lease: e.cfg.OrphanTimeout, TableName: r.table.Name, KeyHash: r.hash, ConnectionID: r.backend,
		})
	}
}

// lockReservation locks r's job row on tx and checks it is still reserved by r's connection: a
// reservation reclaimed meanwhile (lease expired) must not commit, whoever holds the key now.
// tx may be on another connection (r's may have been closed by a cancelled query).
func lockReservation(ctx context.Context, tx pgx.Tx, r *reservation) error {
	n, err := queries.JobLockReserved(ctx, tx, dbsqlc.JobLockReservedParams{TableName: r.table.Name, KeyHash: r.hash, ConnectionID: r.backend})
	if err != nil {
		return fmt.Errorf("lock job %s/%s: %w", r.table.Name, r.hash, err)
	}
	if n != 1 {
		return fmt.Errorf("job %s/%s: %w", r.table.Name, r.hash, ErrNotReserved)
	}
	return nil
}

// finishSuccess deletes r's job, or keeps it as success with its duration.
func (e *Engine) finishSuccess(ctx context.Context, tx dbsqlc.DBTX, r *reservation) error {
	var err error
	if e.cfg.KeepSuccess {
		var meta []byte
		if meta, err = json.Marshal(r.meta); err == nil {
			err = queries.JobSetSuccess(ctx, tx, dbsqlc.JobSetSuccessParams{
				RunDuration: new(time.Since(r.started).Seconds()), RunMetadata: meta, TableName: r.table.Name, KeyHash: r.hash,
			})
		}
	} else {
		err = queries.JobDelete(ctx, tx, dbsqlc.JobDeleteParams{TableName: r.table.Name, KeyHash: r.hash})
	}
	if err != nil {
		return fmt.Errorf("complete job %s/%s: %w", r.table.Name, r.hash, err)
	}
	return nil
}

// finishError records make's failure on r's job and returns the error_message it recorded.
func finishError(ctx context.Context, tx pgx.Tx, r *reservation, makeErr error) (string, error) {
	msg, stack := describe(makeErr)
	meta, err := json.Marshal(r.meta)
	if err == nil {
		err = queries.JobSetError(ctx, tx, dbsqlc.JobSetErrorParams{
			ErrorMessage: &msg, ErrorStack: &stack, RunDuration: new(time.Since(r.started).Seconds()),
			RunMetadata: meta, TableName: r.table.Name, KeyHash: r.hash,
		})
	}
	if err != nil {
		return "", fmt.Errorf("record error of job %s/%s: %w", r.table.Name, r.hash, err)
	}
	return msg, nil
}

// errQueued is what a statement handed to queued reports: it was queued, not run.
var errQueued = errors.New("statement queued on a batch")

// queued is the dbsqlc.DBTX that queues the statement a query.sql method hands it on a pgx batch
// instead of running it, so that statements of query.sql share a round trip with others. The
// caller reads each result from the batch in the order queued; the method's own result is
// errQueued (or nothing, for :exec) and is ignored.
type queued struct{ b *pgx.Batch }

var _ dbsqlc.DBTX = queued{}

func (q queued) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.b.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (q queued) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	q.b.Queue(sql, args...)
	return nil, errQueued
}

func (q queued) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	q.b.Queue(sql, args...)
	return queuedRow{}
}

type queuedRow struct{}

func (queuedRow) Scan(...any) error { return errQueued }

// lockingBegin begins the transaction that finishes r on r's connection and, in the same round
// trip, locks r's reservation (lockReservation) and looks r's key up in the target (targetHas):
// one round trip instead of three. The statements run in that order on the server, so the look
// up reads the target once the job's lock is held, exactly as the three round trips did. A
// reservation no longer ours rolls the transaction back and fails with ErrNotReserved.
type lockingBegin struct {
	r    *reservation
	made bool // whether the target held r's key, once Begin succeeded
}

// Begin is called by pgx.BeginFunc.
func (l *lockingBegin) Begin(ctx context.Context) (pgx.Tx, error) {
	r := l.r
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	_, _ = queries.JobLockReserved(ctx, queued{b}, dbsqlc.JobLockReservedParams{TableName: r.table.Name, KeyHash: r.hash, ConnectionID: r.backend})
	b.Queue(targetHasSQL(r.table), r.key)
	br := r.conn.SendBatch(ctx, b)
	tx := br.Tx()
	var n int64
	_, err := br.Exec()
	if err == nil {
		if err = br.QueryRow().Scan(&n); err != nil {
			err = fmt.Errorf("lock job %s/%s: %w", r.table.Name, r.hash, err)
		}
	}
	if err == nil {
		if err = br.QueryRow().Scan(&l.made); err != nil {
			err = fmt.Errorf("look up key in %s: %w", r.table.Target, err)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != 1 {
		err = fmt.Errorf("job %s/%s: %w", r.table.Name, r.hash, ErrNotReserved)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}
