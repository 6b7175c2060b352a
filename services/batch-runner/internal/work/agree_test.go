package work

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/testdb"
)

func TestAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		pool   *pgxpool.Pool
		shards []*shardAgreement
	}
	// setup creates a batch of two shards, starts both and returns their agreements.
	setup := func(t *testing.T, a Agreement) *testBundle {
		t.Helper()
		pool := testdb.NewPool(t, "batch_runner")
		var b store.Started
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			if b, err = store.BatchStart(ctx, tx, 1, "api", time.Hour, time.Minute); err != nil {
				return err
			}
			return store.ShardsCreate(ctx, tx, b, []int{1, 1}, []int64{10, 11})
		}))
		bundle := &testBundle{pool: pool}
		for i := range 2 {
			s, err := store.ShardStart(ctx, pool, b.ID, i, int64(10+i), time.Minute)
			require.NoError(t, err)
			bundle.shards = append(bundle.shards, &shardAgreement{Agreement: a, pool: pool, shard: s, events: sysevent.New(nil)})
		}
		return bundle
	}

	t.Run("ShardsMeetOnOneStaggerAndOneSendInstant", func(t *testing.T) {
		t.Parallel()
		// A shard that polls the instant only after it passed reports itself late. Nobody sleeps
		// until the instants here, so the margin costs nothing, and it is wide enough for a poll
		// on a loaded machine and a busy shared Postgres.
		bundle := setup(t, Agreement{Margin: 2 * time.Second, Wait: 10 * time.Second, Poll: 10 * time.Millisecond})
		offers, spins, sendAts := make([]time.Time, 2), make([]time.Duration, 2), make([]time.Time, 2)
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i, a := range bundle.shards {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 150 * time.Millisecond) // shard 1 gets ready later
				offers[i], spins[i], errs[i] = a.agreeOffer(ctx, time.Duration(i+1)*time.Second)
				time.Sleep(time.Duration(1-i) * 150 * time.Millisecond) // shard 0 is ready to send later
				sendAts[i], errs[2+i] = a.agree(ctx)
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, offers[0], offers[1], "one stagger start for both")
		require.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second}, spins, "the longest spin-up of both")
		require.Equal(t, sendAts[0], sendAts[1], "one send instant for both")
		require.True(t, sendAts[0].After(offers[0]))
		for _, a := range bundle.shards {
			require.Empty(t, a.events.Drain(), "nobody was missing or late")
		}
	})

	t.Run("AShardNeverReadyHoldsNobodyPastTheWait", func(t *testing.T) {
		t.Parallel()
		// An hour's wait that passes on the stubbed clock alone: shard 0 holds while its clock
		// says the wait is on, and fixes the instant without shard 1 once it says it is over.
		const wait, margin = time.Hour, 100 * time.Millisecond
		clock := &stubClock{}
		bundle := setup(t, Agreement{Margin: margin, Wait: wait, Poll: 10 * time.Millisecond, Now: clock.Now})
		for _, a := range bundle.shards {
			require.NoError(t, store.ShardOfferReady(ctx, bundle.pool, a.shard, time.Now(), time.Second))
		}
		// Shard 0 gets ready a wait ago on its clock; shard 1 never gets ready to send.
		clock.set(-wait)
		got := goAwait(func() (time.Time, error) { return bundle.shards[0].agree(ctx) })
		clock.awaitReads(t, 3)
		got.requireRunning(t, "shard 0 holds while its wait lasts")
		unfixed, _, err := store.SendAtState(ctx, bundle.pool, bundle.shards[0].shard.BatchID)
		require.NoError(t, err)
		require.Nil(t, unfixed, "the send instant is not fixed while shard 0's wait lasts")

		ended := time.Now()
		clock.set(0) // the wait is over
		sendAt := got.result(t, "shard 0 held past its wait")
		require.WithinRange(t, sendAt, ended.Truncate(time.Microsecond).Add(margin), time.Now().Add(margin),
			"fixed once the wait was over, by shard 0")
		events := bundle.shards[0].events.Drain()
		require.Len(t, events, 1)
		require.Equal(t, sysevent.ShardNotReady, events[0].Subtype)
		require.JSONEq(t, `{"instant":"send","shards":[1],"fixed_by":0,"wait":"1h0m0s"}`, string(events[0].Data))

		// Shard 1 gets ready after all, its clock past the instant: it learns the instant and
		// says it is late.
		clock.set(time.Minute)
		late, err := bundle.shards[1].agree(ctx)
		require.NoError(t, err)
		require.Equal(t, sendAt, late)
		events = bundle.shards[1].events.Drain()
		require.Len(t, events, 1)
		require.Equal(t, sysevent.ShardLate, events[0].Subtype)
	})

	t.Run("AShardMissingTheOfferIsNotAwaitedTwice", func(t *testing.T) {
		t.Parallel()
		// Shard 1 never comes. Shard 0 fixes the offer without it when its stubbed clock ends
		// the hour's wait; it then sends without awaiting shard 1 again, which would take
		// another hour, since its clock no longer moves past a wait.
		const wait, margin = time.Hour, 100 * time.Millisecond
		clock := &stubClock{}
		bundle := setup(t, Agreement{Margin: margin, Wait: wait, Poll: 10 * time.Millisecond, Now: clock.Now})
		clock.set(-wait)
		type offer struct {
			at   time.Time
			spin time.Duration
		}
		got := goAwait(func() (offer, error) {
			at, spin, err := bundle.shards[0].agreeOffer(ctx, time.Second)
			return offer{at, spin}, err
		})
		clock.awaitReads(t, 3)
		got.requireRunning(t, "shard 0 holds the offer while its wait lasts")
		offerAt, _, err := store.OfferState(ctx, bundle.pool, bundle.shards[0].shard.BatchID)
		require.NoError(t, err)
		require.Nil(t, offerAt, "shard 0 holds the offer while its wait lasts")

		ended := time.Now()
		clock.set(0)
		o := got.result(t, "shard 0 held the offer past its wait")
		require.Equal(t, time.Second, o.spin)
		require.WithinRange(t, o.at, ended.Truncate(time.Microsecond).Add(margin), time.Now().Add(margin))

		sent := goAwait(func() (time.Time, error) { return bundle.shards[0].agree(ctx) })
		sent.result(t, "shard 1 missed the offer, yet shard 0 awaited it again to send")
		events := bundle.shards[0].events.Drain()
		require.Len(t, events, 1, "one absence, at the offer")
		require.JSONEq(t, `{"instant":"offer","shards":[1],"fixed_by":0,"wait":"1h0m0s"}`, string(events[0].Data))
	})

	t.Run("ContextEndsTheWait", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Agreement{Margin: 100 * time.Millisecond, Wait: time.Hour, Poll: 10 * time.Millisecond})
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, _, err := bundle.shards[0].agreeOffer(ctx, time.Second)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// stubClock is a shard's clock at a settable offset from the real one. It counts its reads, so
// that a test knows a waiting shard has looked at it again.
type stubClock struct {
	offset atomic.Int64
	reads  atomic.Int64
}

func (c *stubClock) Now() time.Time {
	c.reads.Add(1)
	return time.Now().Add(time.Duration(c.offset.Load()))
}

func (c *stubClock) set(offset time.Duration) { c.offset.Store(int64(offset)) }

// awaitReads waits until the clock has been read n more times.
func (c *stubClock) awaitReads(t *testing.T, n int64) {
	t.Helper()
	want := c.reads.Load() + n
	require.Eventually(t, func() bool { return c.reads.Load() >= want }, 10*time.Second, time.Millisecond)
}

// pending is a call running on its own goroutine.
type pending[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// goAwait starts f on its own goroutine.
func goAwait[T any](f func() (T, error)) *pending[T] {
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.v, p.err = f()
	}()
	return p
}

// result waits for the call to return and requires no error. The bound is a hang guard for a
// call held by something other than the stubbed clock; it is never what a test measures.
func (p *pending[T]) result(t *testing.T, hung string) T {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal(hung)
	}
	require.NoError(t, p.err)
	return p.v
}

// requireRunning requires the call not returned yet.
func (p *pending[T]) requireRunning(t *testing.T, msg string) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s: returned %v, %v", msg, p.v, p.err)
	default:
	}
}
