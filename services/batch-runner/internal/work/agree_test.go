package work

import (
	"context"
	"sync"
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
		const wait = 300 * time.Millisecond
		bundle := setup(t, Agreement{Margin: 100 * time.Millisecond, Wait: wait, Poll: 10 * time.Millisecond})
		for _, a := range bundle.shards {
			require.NoError(t, store.ShardOfferReady(ctx, bundle.pool, a.shard, time.Now(), time.Second))
		}
		start := time.Now()
		sendAt, err := bundle.shards[0].agree(ctx) // shard 1 never gets ready to send
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), wait, "shard 0 waited for shard 1")
		require.Less(t, time.Since(start), wait+2*time.Second, "but no longer than the wait")
		require.WithinDuration(t, start.Add(wait+100*time.Millisecond), sendAt, time.Second)
		events := bundle.shards[0].events.Drain()
		require.Len(t, events, 1)
		require.Equal(t, sysevent.ShardNotReady, events[0].Subtype)
		require.JSONEq(t, `{"instant":"send","shards":[1],"fixed_by":0,"wait":"300ms"}`, string(events[0].Data))

		// Shard 1 gets ready after all: it learns the instant, already past, and says so.
		time.Sleep(time.Until(sendAt) + 10*time.Millisecond)
		late, err := bundle.shards[1].agree(ctx)
		require.NoError(t, err)
		require.Equal(t, sendAt, late)
		events = bundle.shards[1].events.Drain()
		require.Len(t, events, 1)
		require.Equal(t, sysevent.ShardLate, events[0].Subtype)
	})

	t.Run("AShardMissingTheOfferIsNotAwaitedTwice", func(t *testing.T) {
		t.Parallel()
		// The send must take less than the wait, which awaiting shard 1 again would cost: its
		// agreement is a few round trips, which a loaded machine and a busy shared Postgres can
		// stretch past 300 ms.
		const wait = 1500 * time.Millisecond
		bundle := setup(t, Agreement{Margin: 100 * time.Millisecond, Wait: wait, Poll: 10 * time.Millisecond})
		start := time.Now()
		at, spin, err := bundle.shards[0].agreeOffer(ctx, time.Second) // shard 1 never comes
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), wait)
		require.Equal(t, time.Second, spin)
		require.WithinDuration(t, start.Add(wait+100*time.Millisecond), at, time.Second)
		sendStart := time.Now()
		_, err = bundle.shards[0].agree(ctx)
		require.NoError(t, err)
		require.Less(t, time.Since(sendStart), wait, "shard 1 missed the offer: not awaited to send")
		events := bundle.shards[0].events.Drain()
		require.Len(t, events, 1, "one absence, at the offer")
		require.JSONEq(t, `{"instant":"offer","shards":[1],"fixed_by":0,"wait":"1.5s"}`, string(events[0].Data))
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
