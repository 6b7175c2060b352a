package work

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// Agreement is how the shards of a batch agree their instants through Postgres: when the
// availability stage's stagger starts (with the batch's longest spin-up), then when the hot
// phase's job requests go out.
type Agreement struct {
	// Margin is how far past the moment it is fixed an instant lies. It must cover the other
	// shards' next poll and the skew between the replicas' clocks, since each shard waits for the
	// instant on its own clock.
	Margin time.Duration
	// Wait bounds how long a ready shard waits for the others at each instant: then the instant
	// is fixed without them, and their absence is an event. A shard that never gets ready blocks
	// nobody longer.
	Wait time.Duration
	// Poll is how often a waiting shard looks again.
	Poll time.Duration
	// Now is the shard's clock; time.Now when nil. Tests stub it to move a shard past its wait
	// without waiting.
	Now func() time.Time
}

// now reads the shard's clock.
func (a Agreement) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// within bounds one shard's wait at one instant, for the miners' read deadlines.
func (a Agreement) within() time.Duration { return a.Wait + a.Margin + 5*a.Poll + 10*time.Second }

// shardAgreement is one shard's part in its batch's agreement.
type shardAgreement struct {
	Agreement
	pool   *pgxpool.Pool
	shard  store.ShardStarted
	events *sysevent.Recorder
}

// instant is one instant the shards of a batch agree on.
type instant struct {
	name string
	// state returns the instant once fixed, and the shards still expected.
	state func(context.Context) (*time.Time, []int32, error)
	// fix fixes the instant unless it is fixed; true for the one call that fixed it.
	fix func(context.Context) (bool, error)
}

// agreeOffer marks the shard ready to make its initial requests and returns the batch's
// stagger: its start and its longest spin-up. A shard late for the start begins its stagger
// now, so that its executors still get their whole spin-up.
func (a *shardAgreement) agreeOffer(ctx context.Context, maxSpin time.Duration) (time.Time, time.Duration, error) {
	readyAt := a.now()
	if err := store.ShardOfferReady(ctx, a.pool, a.shard, readyAt, maxSpin); err != nil {
		return time.Time{}, 0, err
	}
	var offer store.Offer
	at, err := a.await(ctx, instant{
		name: "offer",
		state: func(ctx context.Context) (*time.Time, []int32, error) {
			o, waiting, err := store.OfferState(ctx, a.pool, a.shard.BatchID)
			if o == nil {
				return nil, waiting, err
			}
			offer = *o
			return &offer.At, waiting, nil
		},
		fix: func(ctx context.Context) (bool, error) { return store.OfferFix(ctx, a.pool, a.shard.BatchID, a.Margin) },
	}, readyAt)
	if err != nil {
		return time.Time{}, 0, err
	}
	if now := a.now(); at.Before(now) {
		at = now
	}
	return at, offer.MaxSpin, nil
}

// agree marks the shard ready to send and returns the batch's send instant.
func (a *shardAgreement) agree(ctx context.Context) (time.Time, error) {
	readyAt := a.now()
	if _, err := store.ShardReady(ctx, a.pool, a.shard, readyAt); err != nil {
		return time.Time{}, err
	}
	return a.await(ctx, instant{
		name: "send",
		state: func(ctx context.Context) (*time.Time, []int32, error) {
			return store.SendAtState(ctx, a.pool, a.shard.BatchID)
		},
		fix: func(ctx context.Context) (bool, error) {
			return store.SendAtFix(ctx, a.pool, a.shard.BatchID, a.Margin)
		},
	}, readyAt)
}

// await polls until the instant is fixed. When no shard is expected any more, or the wait since
// readyAt is over, it fixes the instant itself; whichever shard gets there first fixes it, once
// for all. It runs before the availability stage's requests and before the release, never
// during the hot phase.
func (a *shardAgreement) await(ctx context.Context, in instant, readyAt time.Time) (time.Time, error) {
	deadline := readyAt.Add(a.Wait)
	for {
		at, waiting, err := in.state(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if at != nil {
			a.noteLate(in.name, *at)
			return *at, nil
		}
		if len(waiting) == 0 || !a.now().Before(deadline) {
			if err := a.fix(ctx, in, waiting); err != nil {
				return time.Time{}, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("wait for the shards of batch %d (%s): %w", a.shard.BatchID, in.name, ctx.Err())
		case <-time.After(a.Poll):
		}
	}
}

// fix fixes the instant; the shard whose fix took records the shards it went without.
func (a *shardAgreement) fix(ctx context.Context, in instant, waiting []int32) error {
	fixed, err := in.fix(ctx)
	if err != nil || !fixed || len(waiting) == 0 {
		return err
	}
	a.events.Add(sysevent.TypeValidatorFailure, sysevent.ShardNotReady,
		fmt.Sprintf("%s instant fixed without %d shard(s) not ready within %s", in.name, len(waiting), a.Wait),
		map[string]any{"instant": in.name, "shards": waiting, "fixed_by": a.shard.Shard, "wait": a.Wait.String()})
	return nil
}

// noteLate records a shard that got ready only after the agreed instant.
func (a *shardAgreement) noteLate(name string, at time.Time) {
	if late := a.now().Sub(at); late > 0 {
		a.events.Add(sysevent.TypeValidatorFailure, sysevent.ShardLate,
			fmt.Sprintf("shard ready %s after the agreed %s instant; going on at once", late.Round(time.Millisecond), name),
			map[string]any{"instant": name, "shard": a.shard.Shard, "at": at, "late_us": late.Microseconds()})
	}
}
