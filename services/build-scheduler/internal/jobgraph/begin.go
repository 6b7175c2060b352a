package jobgraph

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errOneStatement is returned by beginWith for any statement but its first, single-row one.
var errOneStatement = errors.New("a transaction begun with its statement runs that one statement only")

// beginWith is the dbsqlc.DBTX of a statement that opens a transaction: its QueryRow sends BEGIN
// and the statement in one pgx batch (Batch.BeginTx), saving the round trip of a BEGIN of its
// own. close ends the batch and returns the transaction, which the caller continues on and must
// commit or roll back.
type beginWith struct {
	conn *pgx.Conn
	br   pgx.BatchResults
	then string // a statement sent after the first in the same round trip, whose result close reads
}

// QueryRow begins the transaction and runs sql in it, in one round trip.
func (b *beginWith) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if b.br != nil {
		return errRow{errOneStatement}
	}
	batch := &pgx.Batch{}
	batch.BeginTx(pgx.TxOptions{})
	batch.Queue(sql, args...)
	if b.then != "" {
		batch.Queue(b.then)
	}
	b.br = b.conn.SendBatch(ctx, batch)
	if _, err := b.br.Exec(); err != nil {
		return errRow{err}
	}
	return b.br.QueryRow()
}

// Exec is refused: beginWith carries one single-row statement.
func (b *beginWith) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errOneStatement
}

// Query is refused: beginWith carries one single-row statement.
func (b *beginWith) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errOneStatement
}

// close reads the batch to its end and returns the transaction it began (nil if QueryRow never
// ran).
func (b *beginWith) close() (pgx.Tx, error) {
	if b.br == nil {
		return nil, nil
	}
	tx := b.br.Tx()
	return tx, b.br.Close()
}

// errRow is a row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
