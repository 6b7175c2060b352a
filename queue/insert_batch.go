package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// ErrNotBatched is BatchInsertMany's answer when River would run a statement of its own before
// its insert: nothing was queued, and InsertManyTx on the transaction must do the insert.
var ErrNotBatched = errors.New("river's insert could not be queued on a batch")

// BatchInsertMany queues River's insert of params, the statement InsertManyTx runs, on b: a batch
// sent inside the transaction the jobs must commit with, so that the insert travels with the
// transaction's other statements (its COMMIT, say) instead of taking a round trip of its own.
// The insert's result is checked when the batch's results reach it (or are closed). Unlike
// InsertManyTx it never notifies the jobs' queues: the caller announces them once they have
// committed (Announcer, NotifyInserted).
//
// River's driver detects the server's capabilities with a statement of its own the first time
// it inserts: until an InsertManyTx of client has run, BatchInsertMany queues nothing and
// returns ErrNotBatched.
func BatchInsertMany(ctx context.Context, b *pgx.Batch, client *Client, params []river.InsertManyParams) error {
	rec := &recordingTx{}
	_, err := client.InsertManyTx(ctx, rec, params)
	switch {
	case errors.Is(err, errNotRecorded):
		return ErrNotBatched
	case !errors.Is(err, errRecorded):
		return fmt.Errorf("build River's insert of %d jobs: %w", len(params), err)
	}
	n := len(params)
	b.Queue(rec.sql, rec.args...).Query(func(rows pgx.Rows) error {
		inserted := 0
		for rows.Next() {
			inserted++
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("insert %d jobs: %w", n, err)
		}
		if inserted != n {
			return fmt.Errorf("insert %d jobs: %d rows came back", n, inserted)
		}
		return nil
	})
	return nil
}
