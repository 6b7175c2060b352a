package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"drover.dev/migrations"
	"drover.dev/shared/config"
	"drover.dev/shared/testdb"
)

// fleetPorts is held by a test while make run's fleet runs on its fixed ports.
var fleetPorts sync.Mutex

// lockFleetPorts holds fleetPorts until the test's cleanups (the fleet's stop among them, when
// registered after this) have run.
func lockFleetPorts(t *testing.T) {
	t.Helper()
	fleetPorts.Lock()
	t.Cleanup(fleetPorts.Unlock)
}

// ownTable is a table of each schema that its service writes.
var ownTable = map[string]string{
	"miner_sync":      "miner_sync.miners",
	"batch_runner":    "batch_runner.batches",
	"scorer":          "scorer.miner_scores",
	"build_scheduler": "build_scheduler.job_graph",
	"populate_worker": "populate_worker.jobs",
}

// TestEveryServiceRunsAsItsOwnRole runs make run's fleet (the five services and a build worker)
// on one database, each process connected as its own role, and its demos: probes between every
// pair of services, a batch (batch-runner reads miner-sync's miners and enqueues scorer's job), a
// build group and a populate. Then it shows the separation: each role may write its own tables,
// and writing (or reading) another service's is permission denied, except the documented
// cross-read and River's insert into every queue.
func TestEveryServiceRunsAsItsOwnRole(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin := buildCommands(t, root)
	lockFleetPorts(t)
	requireFreePorts(t, bin)
	opts := options{bin: bin, databaseURL: testdb.New(t), logs: t.TempDir(), token: "roles-test-token", once: true}

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, opts.databaseURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	peaks := watchConnections(t, opts.databaseURL)

	p := newPrinter(testLog{t})
	f, err := startFleet(ctx, opts, p)
	t.Cleanup(func() { f.stop(p) })
	require.NoError(t, err, "start the fleet (logs in %s)", opts.logs)
	require.NoError(t, runDemos(ctx, opts, f, p), "the demos, every service as its own role (logs in %s)", opts.logs)
	requireWithinBudget(t, peaks())
	connected := map[string]bool{}
	rows, err := admin.Query(ctx, "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = current_database()")
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		connected[name] = true
	}
	require.NoError(t, rows.Err())
	for _, u := range migrations.Units {
		require.True(t, connected[u.Role()], "%s is connected as %s (connected: %v)", u.Name, u.Role(), connected)
	}

	for _, u := range migrations.Units {
		url, err := roleURL(opts.databaseURL, u.Name)
		require.NoError(t, err)
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		home := u.Home.Schema()
		require.NoError(t, execSQL(ctx, conn, "DELETE FROM "+ownTable[home]+" WHERE false"), "%s writes its own schema", u.Role())
		require.NoError(t, execSQL(ctx, conn, "SELECT count(*) FROM "+home+".river_job"), "%s reads its own queue", u.Role())
		for schema, table := range ownTable {
			if schema == home {
				continue
			}
			requireDenied(t, execSQL(ctx, conn, "DELETE FROM "+table+" WHERE false"), u.Role(), "delete from "+table)
			requireDenied(t, execSQL(ctx, conn, "UPDATE "+table+" SET "+firstColumn(t, admin, table)+" = "+firstColumn(t, admin, table)+" WHERE false"), u.Role(), "update "+table)
			var mayDelete bool
			require.NoError(t, conn.QueryRow(ctx, "SELECT has_table_privilege($1, 'DELETE')", schema+".river_job").Scan(&mayDelete))
			require.False(t, mayDelete, "%s may not delete from %s.river_job", u.Role(), schema)
			requireDenied(t, execSQL(ctx, conn, "CREATE TABLE "+schema+".intruder (id int)"), u.Role(), "create a table in "+schema)
			read := execSQL(ctx, conn, "SELECT count(*) FROM "+table)
			if u.Name == "batch-runner" && table == "miner_sync.miners" {
				require.NoError(t, read, "batch-runner reads miner-sync's miners")
				continue
			}
			requireDenied(t, read, u.Role(), "read "+table)
		}
		if !u.Owner {
			requireDenied(t, execSQL(ctx, conn, "CREATE TABLE "+home+".intruder (id int)"), u.Role(), "create a table in its home schema")
		}
	}
}

// watchConnections samples pg_stat_activity every 10 ms until the returned function is called,
// which returns the peak number of connections each application_name had.
func watchConnections(t *testing.T, databaseURL string) func() map[string]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), databaseURL)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	peaks := map[string]int{}
	done := make(chan error, 1)
	go func() {
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			rows, err := conn.Query(ctx, `SELECT application_name, count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name LIKE 'drover-%' GROUP BY 1`)
			if err != nil {
				done <- err
				return
			}
			var name string
			var n int
			_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error { peaks[name] = max(peaks[name], n); return nil })
			if err != nil && ctx.Err() == nil {
				done <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		done <- nil
	}()
	return func() map[string]int {
		stop()
		require.NoError(t, <-done)
		return peaks
	}
}

// requireWithinBudget requires every process's peak connections to stay within what the
// connection budget counts for it: its pool (the default share) and River's listener.
func requireWithinBudget(t *testing.T, peaks map[string]int) {
	t.Helper()
	t.Logf("peak connections by process: %v", peaks)
	for prefix := range config.DBBudget {
		name := "drover-" + strings.ReplaceAll(strings.ToLower(prefix), "_", "-")
		budget := int(config.Common{}.ProcessConns(prefix))
		require.Contains(t, peaks, name, "%s never connected under its application_name", name)
		require.LessOrEqual(t, peaks[name], budget, "%s opened more than its pool and River's listener", name)
	}
}

func execSQL(ctx context.Context, conn *pgx.Conn, sql string) error {
	_, err := conn.Exec(ctx, sql)
	return err
}

// requireDenied requires err to be Postgres's insufficient_privilege.
func requireDenied(t *testing.T, err error, role, what string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr) && pgErr.Code == "42501", "%s may not %s: got %v", role, what, err)
}

// firstColumn names a column of table that may be assigned, to write an UPDATE that would change nothing.
func firstColumn(t *testing.T, admin *pgx.Conn, table string) string {
	t.Helper()
	var name string
	require.NoError(t, admin.QueryRow(context.Background(),
		`SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
		 AND attidentity = '' AND attgenerated = '' ORDER BY attnum LIMIT 1`, table).Scan(&name))
	return fmt.Sprintf("%q", name)
}
