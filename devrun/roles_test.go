package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"drover.dev/migrations"
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
	_, opts := startDemoFleet(t, "roles-test-token")
	ctx := context.Background()

	admin, err := pgx.Connect(ctx, opts.databaseURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
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
