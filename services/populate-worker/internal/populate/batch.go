package populate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
)

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
