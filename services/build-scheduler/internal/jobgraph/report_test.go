package jobgraph

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/testdb"
)

// Report begins its own transaction in the round trip of the report's statement: what it applies,
// with what also writes, commits together or not at all.
func TestReportInItsOwnTransaction(t *testing.T) {
	t.Parallel()

	// setup submits the chain a → b on a fresh database and takes a.
	setup := func(t *testing.T) (*pgxpool.Pool, *Graph, int64, Report) {
		t.Helper()
		pool := testdb.NewPool(t, "build_scheduler")
		graph := testGraph(t)
		g := submitCommitted(t, pool, graph, dag.Submission{Name: "g", Jobs: []dag.JobSpec{spec("a", "linux"), spec("b", "linux", "a")}}, 2)
		c, ok := next(t, pool, "linux", nil)
		require.True(t, ok)
		return pool, graph, g, reportOf(c.Build, queue.BuildSucceeded)
	}
	states := func(t *testing.T, pool *pgxpool.Pool, g int64) map[JobState]int {
		t.Helper()
		group, err := GetGroup(context.Background(), pool, g)
		require.NoError(t, err)
		return group.Counts
	}

	t.Run("CommitsWithAlso", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		pool, graph, g, args := setup(t)
		var sawTx bool
		res, err := graph.Report(ctx, pool, args, func(tx pgx.Tx, _ Result) error {
			_, err := tx.Exec(ctx, `SELECT 1`)
			sawTx = err == nil
			return err
		})
		require.NoError(t, err)
		require.True(t, res.Applied)
		require.True(t, sawTx)
		require.Equal(t, map[JobState]int{Complete: 1, Ready: 1}, states(t, pool, g))
		var builds int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'build_run'`).Scan(&builds))
		require.Equal(t, 2, builds, "b's River job committed with the report")

		again, err := graph.Report(ctx, pool, args, nil)
		require.NoError(t, err)
		require.False(t, again.Applied, "a repeated report is a no-op")
	})

	t.Run("RolledBackWhenAlsoFails", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		pool, graph, g, args := setup(t)
		boom := errors.New("boom")
		_, err := graph.Report(ctx, pool, args, func(pgx.Tx, Result) error { return boom })
		require.ErrorIs(t, err, boom)
		require.Equal(t, map[JobState]int{Ready: 1, Waiting: 1}, states(t, pool, g))
		require.Equal(t, int32(0), pool.Stat().AcquiredConns(), "the connection went back to the pool")

		res, err := graph.Report(ctx, pool, args, nil)
		require.NoError(t, err)
		require.True(t, res.Applied, "the report applies once also lets it")
	})
}
