package main

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/config"
)

// The pool must hold a connection per make (MAKE_WORKERS), the two listeners' and a make's
// second connection: check-config refuses less, and the defaults fit the budget's share.
func TestCheckPoolFitsTheMakes(t *testing.T) {
	t.Parallel()
	ok := Config{HTTPAddr: ":8085", Examples: true, Settings: wiring.Settings{MakeWorkers: 11}}.withDefaults()
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

// FEED_AHEAD below one would leave the feeder enqueueing nothing, for good: check-config says so.
func TestCheckFeedAhead(t *testing.T) {
	t.Parallel()
	cfg := Config{HTTPAddr: ":8085", Examples: true, Settings: wiring.Settings{MakeWorkers: 11}}.withDefaults()
	for _, ahead := range []int{-1, 0} {
		cfg.FeedAhead = ahead
		require.ErrorContains(t, errors.Join(cfg.Check()...), fmt.Sprintf("POPULATE_WORKER_FEED_AHEAD: %d, want 1 or more", ahead))
	}
	cfg.FeedAhead = 1
	require.Empty(t, cfg.Check())
}

// An operator's zero is the operator's: a period or timeout of zero is refused by name, and
// MIN_SCHEDULING_INTERVAL=0 is kept, DataJoint's min_scheduling_interval of 0 (schedule whatever
// the last event), not replaced by the default.
func TestCheckZeroDurations(t *testing.T) {
	t.Parallel()
	ok := Config{HTTPAddr: ":8085", Examples: true, Settings: wiring.Settings{MakeWorkers: 11}}.withDefaults()
	ok.MinSchedulingInterval = 0
	require.Empty(t, ok.Check(), "MIN_SCHEDULING_INTERVAL=0")
	cfg := ok
	cfg.MinSchedulingInterval = -time.Second
	require.ErrorContains(t, errors.Join(cfg.Check()...), "POPULATE_WORKER_MIN_SCHEDULING_INTERVAL: -1s, want 0 (schedule whatever the last event) or more")
	cfg.MinSchedulingInterval, cfg.RescheduleGrace = 0, -time.Second
	require.ErrorContains(t, errors.Join(cfg.Check()...), "POPULATE_WORKER_RESCHEDULE_GRACE: -1s, want 0 (make a rescheduled key at once) or more")
	ok.RescheduleGrace = 0
	require.Empty(t, ok.Check(), "RESCHEDULE_GRACE=0")
	// Every duration of the settings but those two, read from the struct, so that a new one
	// Check forgets fails here.
	v := reflect.ValueOf(&cfg.Settings).Elem()
	checked := 0
	for i := range v.NumField() {
		field, name := v.Field(i), v.Type().Field(i).Tag.Get("envconfig")
		if _, isDuration := field.Interface().(time.Duration); !isDuration || name == "MIN_SCHEDULING_INTERVAL" || name == "RESCHEDULE_GRACE" {
			continue
		}
		cfg = ok
		field.SetInt(0)
		require.ErrorContains(t, errors.Join(cfg.Check()...), "POPULATE_WORKER_"+name+": 0s, want more than zero")
		checked++
	}
	require.Equal(t, 10, checked, "the periods and timeouts this test knows of")
}
