package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/config"
)

// The pool must hold a connection per make (MAKE_WORKERS), the two listeners' and a make's
// second connection: check-config refuses less, and the defaults fit the budget's share.
func TestCheckPoolFitsTheMakes(t *testing.T) {
	t.Parallel()
	ok := Config{HTTPAddr: ":8085", Examples: true, MakeWorkers: 11}
	require.Empty(t, ok.Check(), "the defaults in the budget's share (%d)", config.DBBudget["POPULATE_WORKER"])
	for _, tc := range []struct {
		name        string
		pool        int32
		makeWorkers int
		want        string
	}{
		{"MakeWorkersCount", 14, 12, "POPULATE_WORKER_DB_MAX_CONNS 14 is too small for POPULATE_WORKER_MAKE_WORKERS 12: at least MAKE_WORKERS + 3 = 15"},
		{"FewMakeWorkers", 5, 3, "at least MAKE_WORKERS + 3 = 6"},
		{"NegativeMakeWorkers", 14, -1, "POPULATE_WORKER_MAKE_WORKERS: -1, want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := ok
			cfg.DBMaxConns, cfg.MakeWorkers = tc.pool, tc.makeWorkers
			require.ErrorContains(t, errors.Join(cfg.Check()...), tc.want)
		})
	}
	for _, fits := range []struct {
		pool        int32
		makeWorkers int
	}{{15, 12}, {7, 4}, {3, 0}} {
		cfg := ok
		cfg.DBMaxConns, cfg.MakeWorkers = fits.pool, fits.makeWorkers
		require.Empty(t, cfg.Check(), "pool %d, %d workers", fits.pool, fits.makeWorkers)
	}
}

// FEED_AHEAD below zero would leave the feeder enqueueing nothing, for good: check-config says so.
func TestCheckFeedAhead(t *testing.T) {
	t.Parallel()
	cfg := Config{HTTPAddr: ":8085", Examples: true, MakeWorkers: 11, FeedAhead: -1}
	require.ErrorContains(t, errors.Join(cfg.Check()...), "POPULATE_WORKER_FEED_AHEAD: -1, want 1 or more (0: the default)")
	cfg.FeedAhead = 0
	require.Empty(t, cfg.Check())
}
