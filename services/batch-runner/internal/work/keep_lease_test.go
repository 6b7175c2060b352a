package work

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKeepLeaseHoldsBackWhileQuiet: no renewal is sent while the hot phase's release holds the
// lease quiet, and renewals resume after it, without the attempt being cancelled.
func TestKeepLeaseHoldsBackWhileQuiet(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second // a tick every 500 ms
	var renewals atomic.Int32
	quiet := new(atomic.Bool)
	quiet.Store(true)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := keepLease(lease, time.Now(), quiet, func(context.Context) error {
		renewals.Add(1)
		return nil
	}, cancel, slog.New(slog.DiscardHandler))
	defer stop()

	time.Sleep(lease / 2) // two ticks fall while quiet
	require.Zero(t, renewals.Load(), "a renewal was sent during the release")
	quiet.Store(false)
	require.Eventually(t, func() bool { return renewals.Load() > 0 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, context.Cause(ctx), "the attempt was stopped")
}
