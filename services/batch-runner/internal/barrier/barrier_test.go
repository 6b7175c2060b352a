package barrier

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGate(t *testing.T) {
	t.Parallel()

	t.Run("ReleasesEveryWaiter", func(t *testing.T) {
		t.Parallel()
		g := NewGate()
		var wg sync.WaitGroup
		woke := make(chan time.Time, 50)
		for range 50 {
			wg.Go(func() {
				require.NoError(t, g.Wait(context.Background()))
				woke <- time.Now()
			})
		}
		time.Sleep(10 * time.Millisecond)
		require.Empty(t, woke, "nobody passes a shut gate")
		at := g.Open()
		wg.Wait()
		close(woke)
		for w := range woke {
			require.False(t, w.Before(at))
		}
	})

	t.Run("OpenTwiceKeepsFirstInstant", func(t *testing.T) {
		t.Parallel()
		g := NewGate()
		require.True(t, g.OpenedAt().IsZero())
		first := g.Open()
		require.Equal(t, first, g.Open())
		require.Equal(t, first, g.OpenedAt())
	})

	t.Run("WaitEndsWithContext", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, NewGate().Wait(ctx), context.DeadlineExceeded)
	})
}

func TestRendezvous(t *testing.T) {
	t.Parallel()

	t.Run("OpensWhenLastPartyArrives", func(t *testing.T) {
		t.Parallel()
		r := NewRendezvous(3)
		r.Arrive()
		r.Arrive()
		select {
		case <-r.Done():
			t.Fatal("open before the last party")
		default:
		}
		require.NoError(t, r.ArriveAndWait(context.Background()))
	})

	t.Run("ZeroPartiesIsOpen", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, NewRendezvous(0).ArriveAndWait(context.Background()))
	})
}

// releaser is one way to hold n goroutines and let them all go.
type releaser struct {
	name    string
	prepare func() (wait func(), release func())
}

var releasers = []releaser{
	{"chan_close", func() (func(), func()) {
		g := NewGate()
		return func() { <-g.Done() }, func() { g.Open() }
	}},
	{"cond_broadcast", func() (func(), func()) {
		var mu sync.Mutex
		cond := sync.NewCond(&mu)
		open := false
		return func() {
				mu.Lock()
				for !open {
					cond.Wait()
				}
				mu.Unlock()
			}, func() {
				mu.Lock()
				open = true
				mu.Unlock()
				cond.Broadcast()
			}
	}},
	{"rwmutex_unlock", func() (func(), func()) {
		var mu sync.RWMutex
		mu.Lock()
		// The empty read section is the point: waiters block on RLock until the writer unlocks.
		return func() { mu.RLock(); mu.RUnlock() }, mu.Unlock //nolint:staticcheck // SA2001 is the mechanism measured

	}},
}

// BenchmarkRelease measures, for each releaser, the spread between the release and the last
// waiter running again (p50 over b.N rounds), with 5,000 waiters as in a large batch.
func BenchmarkRelease(b *testing.B) {
	const waiters = 5000
	for _, r := range releasers {
		b.Run(r.name, func(b *testing.B) {
			spreads := make([]time.Duration, 0, b.N)
			for b.Loop() {
				spreads = append(spreads, releaseOnce(r, waiters))
			}
			slices.Sort(spreads)
			p50 := spreads[len(spreads)/2]
			b.ReportMetric(float64(p50.Microseconds()), "spread-µs")
			fmt.Printf("barrier %-15s waiters=%d p50 release→last wake %v\n", r.name, waiters, p50)
		})
	}
}

func releaseOnce(r releaser, n int) time.Duration {
	wait, release := r.prepare()
	var ready, done sync.WaitGroup
	woke := make([]int64, n)
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			wait()
			woke[i] = time.Now().UnixNano()
		}()
	}
	ready.Wait()
	time.Sleep(5 * time.Millisecond) // let every goroutine park
	at := time.Now().UnixNano()
	release()
	done.Wait()
	return time.Duration(slices.Max(woke) - at)
}
