package migrations

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
)

func TestUpOfOneServiceMigratesItsSchemaAndRoleAndTheOthersCompleteTheGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := scratchDatabase(t)
	logger := slog.New(slog.DiscardHandler)
	batchRunner, err := ParseUnit("batch-runner")
	require.NoError(t, err)
	require.NoError(t, UpFor(ctx, url, []Unit{batchRunner}, nil, logger))

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	exists := func(table string) bool {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok))
		return ok
	}
	for _, table := range []string{"batch_runner.river_job", "batch_runner.probes", "batch_runner.batches"} {
		require.True(t, exists(table), table)
	}
	require.False(t, exists("miner_sync.miners"), "other schemas are left alone")
	require.False(t, exists("scorer.river_job"), "other schemas are left alone")

	privilege := func(role, table, priv string) bool {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, "SELECT has_table_privilege($1, $2, $3)", role, table, priv).Scan(&ok))
		return ok
	}
	require.True(t, privilege("drover_batch_runner", "batch_runner.batches", "INSERT"))

	// Migrated later, miner-sync's and scorer's schemas grant batch-runner's role what it needs
	// there: reading the miners, enqueueing score_batch.
	minerSync, err := ParseUnit("miner-sync")
	require.NoError(t, err)
	scorer, err := ParseUnit("scorer")
	require.NoError(t, err)
	require.NoError(t, UpFor(ctx, url, []Unit{minerSync, scorer}, nil, logger))
	require.True(t, privilege("drover_batch_runner", "miner_sync.miners", "SELECT"))
	require.False(t, privilege("drover_batch_runner", "miner_sync.miners", "UPDATE"))
	require.True(t, privilege("drover_batch_runner", "scorer.river_job", "INSERT"))
	require.False(t, privilege("drover_batch_runner", "scorer.miner_scores", "SELECT"))
	require.False(t, privilege("drover_scorer", "batch_runner.batches", "INSERT"))
	require.True(t, privilege("drover_scorer", "batch_runner.river_job", "INSERT"), "probes go to every service")
}

func TestParseUnit(t *testing.T) {
	t.Parallel()
	u, err := ParseUnit("build-worker")
	require.NoError(t, err)
	require.Equal(t, queue.BuildScheduler, u.Home)
	require.Equal(t, "drover_build_worker", u.Role())
	require.Equal(t, "DROVER_DB_PASSWORD_BUILD_WORKER", u.PasswordEnv())
	_, err = ParseUnit("billing")
	require.ErrorIs(t, err, queue.ErrUnknownService)
	require.Len(t, Units, len(queue.Services)+1)
}

// TestRoleCreationIsRaceSafe creates one role from many sessions at once, as migrations of
// several databases of one cluster do (roles belong to the cluster).
func TestRoleCreationIsRaceSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, serverURL())
	require.NoError(t, err)
	defer pool.Close()
	u := Unit{Name: fmt.Sprintf("test-%x", rand.Uint32()), Home: queue.Scorer}
	defer func() {
		_, err := pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{u.Role()}.Sanitize())
		require.NoError(t, err)
	}()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = ensureRole(ctx, pool, u, "") })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, ensureRole(ctx, pool, u, "it's secret"))
	var login, password bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT rolcanlogin, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = $1", u.Role()).Scan(&login, &password))
	require.True(t, login)
	require.True(t, password)
}
