package work

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// Agreement is how the shards of a batch agree their send instant through Postgres.
type Agreement struct {
	// Margin is how far past the moment it is fixed the send instant lies. It must cover the
	// other shards' next poll and the skew between the replicas' clocks, since each shard sleeps
	// until the instant on its own clock.
	Margin time.Duration
	// Wait bounds how long a ready shard waits for the others: then the instant is fixed without
	// them, and their absence is an event. A shard that never gets ready blocks nobody longer.
	Wait time.Duration
	// Poll is how often a waiting shard looks again.
	Poll time.Duration
}

// within bounds one shard's agreement, for the miners' read deadlines.
func (a Agreement) within() time.Duration { return a.Wait + a.Margin + 5*a.Poll + 10*time.Second }

// shardAgreement is one shard's part in its batch's agreement.
type shardAgreement struct {
	Agreement
	pool   *pgxpool.Pool
	shard  store.ShardStarted
	events *sysevent.Recorder
}

// agree marks the shard ready and returns the batch's send instant: polled until every shard is
// ready (or finished), or until the wait is over; then whichever shard gets there first fixes it,
// once for all. It runs between the availability stage and the release, never during the hot
// phase.
func (a *shardAgreement) agree(ctx context.Context) (time.Time, error) {
	readyAt := time.Now()
	if _, err := store.ShardReady(ctx, a.pool, a.shard, readyAt); err != nil {
		return time.Time{}, err
	}
	deadline := readyAt.Add(a.Wait)
	for {
		sendAt, waiting, err := store.SendAtState(ctx, a.pool, a.shard.BatchID)
		if err != nil {
			return time.Time{}, err
		}
		if sendAt != nil {
			a.noteLate(*sendAt)
			return *sendAt, nil
		}
		if len(waiting) == 0 || !time.Now().Before(deadline) {
			if err := a.fix(ctx, waiting); err != nil {
				return time.Time{}, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("wait for the shards of batch %d: %w", a.shard.BatchID, ctx.Err())
		case <-time.After(a.Poll):
		}
	}
}

// fix fixes the send instant; the shard whose fix took records the shards it went without.
func (a *shardAgreement) fix(ctx context.Context, waiting []int32) error {
	fixed, err := store.SendAtFix(ctx, a.pool, a.shard.BatchID, a.Margin)
	if err != nil || !fixed || len(waiting) == 0 {
		return err
	}
	a.events.Add(sysevent.TypeValidatorFailure, sysevent.ShardNotReady,
		fmt.Sprintf("send instant fixed without %d shard(s) not ready within %s", len(waiting), a.Wait),
		map[string]any{"shards": waiting, "fixed_by": a.shard.Shard, "wait": a.Wait.String()})
	return nil
}

// noteLate records a shard that got ready only after the agreed instant: it sends at once.
func (a *shardAgreement) noteLate(sendAt time.Time) {
	if late := time.Since(sendAt); late > 0 {
		a.events.Add(sysevent.TypeValidatorFailure, sysevent.ShardLate,
			fmt.Sprintf("shard ready %s after the agreed send instant; sending at once", late.Round(time.Millisecond)),
			map[string]any{"shard": a.shard.Shard, "send_at": sendAt, "late_us": late.Microseconds()})
	}
}
