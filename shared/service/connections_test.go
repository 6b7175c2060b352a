package service

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// TestObservedConnectionsMatchTheBudget loads a service until its pool is full and watches
// pg_stat_activity for its application_name: the peak is the pool plus River's listener
// (config.ListenerConns), the figure check-config and the deploy check add up, and never more.
func TestObservedConnectionsMatchTheBudget(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	cfg := servicetest.Config(dbURL)
	cfg.DBMaxConns = 3
	base := startServiceWith(t, queue.Scorer, cfg)
	budget := int(cfg.ProcessConns(queue.Scorer.EnvPrefix()))
	require.Equal(t, 3+config.ListenerConns, budget)

	admin, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	observed := func() int {
		var n int
		require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'drover-scorer'`).Scan(&n))
		return n
	}

	// Load: concurrent readiness checks (a ping through the pool each) and scrapes (the queue
	// gauges' statements) until the pool has been seen full.
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range 12 {
		path := "/readyz"
		if i%2 == 0 {
			path = "/metrics"
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
				if err != nil {
					return
				}
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}
		})
	}
	peak := 0
	require.Eventually(t, func() bool {
		peak = max(peak, observed())
		return peak >= budget
	}, 20*time.Second, 5*time.Millisecond, "the pool never filled: peak %d", peak)
	for range 50 {
		peak = max(peak, observed())
	}
	stop()
	wg.Wait()
	require.Equal(t, budget, peak, "observed connections of drover-scorer against pool %d + listener %d", cfg.DBMaxConns, config.ListenerConns)
}
