package populate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// MakeKey is the River worker's entry point: reserve the job of hash in table, make it and
// finish it, calling complete inside the finishing transaction. A job that is no longer
// scheduled (made by populate, ignored, cleaned up, or a duplicate delivery) only runs complete.
// It returns make's error separately from a failure to record anything.
func (e *Engine) MakeKey(ctx context.Context, table, hash string, complete CompleteFunc) (makeErr, err error) {
	t, err := e.tables.Get(table)
	if err != nil {
		return nil, err
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire connection for %s/%s: %w", table, hash, err)
	}
	defer conn.Release()
	r, err := e.reserveKey(ctx, conn, t, hash, e.runMetadata("river"))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return callComplete(ctx, tx, complete, nil) })
	}
	makeErr, err = e.run(ctx, r, complete)
	if errors.Is(err, errAlreadyMade) {
		return nil, nil // settled, River job included, without make
	}
	if errors.Is(err, ErrNotReserved) {
		// Reclaimed while we made it; the reclaim enqueued a new make job, so this one is done.
		return makeErr, pgx.BeginFunc(context.WithoutCancel(ctx), e.pool, func(tx pgx.Tx) error { return callComplete(ctx, tx, complete, nil) })
	}
	return makeErr, err
}
