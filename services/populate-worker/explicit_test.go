package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// A restricted schedule right after a TRUNCATE of its target (whose trigger sends the background
// schedule) answers exactly the restricted keys, whichever of the two passes comes first; a table
// with auto_schedule false gets no keys from the background pass at all.
func TestRestrictedScheduleAfterTruncateIsExact(t *testing.T) {
	t.Parallel()
	const keys = 40
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	ctx := context.Background()
	var defs string
	for i, name := range []string{"auto", "explicit"} {
		_, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE populate_worker.%[1]s_src (k int PRIMARY KEY);
			CREATE TABLE populate_worker.%[1]s_dst (k int PRIMARY KEY, v int NOT NULL);
			INSERT INTO populate_worker.%[1]s_dst SELECT k, 7 FROM generate_series(1, %[2]d) k;
			INSERT INTO populate_worker.%[1]s_src SELECT generate_series(1, %[2]d)`, name, keys))
		require.NoError(t, err)
		if i > 0 {
			defs += ", "
		}
		defs += fmt.Sprintf(`{"name": %[1]q, "target": "%[1]s_dst", "primary_key": ["k"], "key_source": "SELECT k FROM %[1]s_src",
			"upstream": ["%[1]s_src"], "function_url": "http://127.0.0.1:1/unused"%[2]s}`,
			name, map[bool]string{true: `, "auto_schedule": false`}[name == "explicit"])
	}
	file := filepath.Join(t.TempDir(), "tables.json")
	require.NoError(t, os.WriteFile(file, []byte("["+defs+"]"), 0o600))
	cfg := Config{Common: servicetest.Config(dbURL), TablesFile: file,
		Settings: wiring.Settings{MakeWorkers: 0, MinSchedulingInterval: time.Millisecond, ListenFlushEvery: 5 * time.Millisecond, ScheduleEvery: time.Hour}}
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, cfg, ln, stdout)
	})
	count := func(sql string) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, sql).Scan(&n))
		return n
	}
	// The replica listens once its triggers are installed: wait for it to take a change.
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'`) > 0
	}, 15*time.Second, 10*time.Millisecond)

	_, err := pool.Exec(ctx, `TRUNCATE populate_worker.auto_dst, populate_worker.explicit_dst`)
	require.NoError(t, err)
	for _, name := range []string{"auto", "explicit"} {
		var res struct{ Scheduled int }
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodPost, base+"/v1/tables/"+name+"/schedule",
			map[string]any{"restriction": map[string]any{"k": []int{1, 2, 3, 4, 5}}}, &res))
		require.Equal(t, 5, res.Scheduled, "%s: exactly the restricted keys", name)
	}
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM populate_worker.jobs WHERE table_name = 'auto'`) == keys
	}, 15*time.Second, 10*time.Millisecond, "the background pass schedules the rest of the default table")
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM populate_worker.river_job WHERE kind = 'populate_schedule'
			AND (state IN ('available', 'running', 'retryable', 'pending')
				OR state = 'scheduled' AND scheduled_at < now() + interval '1 minute')`) == 0
	}, 15*time.Second, 10*time.Millisecond, "the background passes have ended (the periodic one waits an hour)")
	require.Equal(t, 5, count(`SELECT count(*) FROM populate_worker.jobs WHERE table_name = 'explicit'`))
	require.Zero(t, count(`SELECT count(*) FROM populate_worker.jobs WHERE table_name = 'explicit' AND (key->>'k')::int > 5`),
		"auto_schedule false: no key outside the restriction")
}
