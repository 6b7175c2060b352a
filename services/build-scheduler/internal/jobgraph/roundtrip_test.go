package jobgraph

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/testdb"
)

// roundTrips counts what a pool sends: each batch and each statement outside one is a round trip.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// A report whose tokens are Announced sends the released jobs' tokens with its COMMIT: two round
// trips, as many as a report that releases nothing, and the connection goes back to the pool in
// no transaction.
func TestAnnouncedReportSendsItsTokensWithItsCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.New(t))
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = "build_scheduler,public"
	cfg.MaxConns = 2
	trips := &roundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	graph := newGraph(t)
	graph.Announced = true
	// Jobs of another target, never claimed, so that no report empties its stripe (each stripe
	// holds two jobs or more) and settles the group: that would take round trips of its own.
	jobs := []dag.JobSpec{spec("a", "linux"), spec("b", "linux", "a"), spec("c", "linux"), spec("d", "linux", "c"), spec("e", "linux")}
	for i := range 2 * 64 {
		jobs = append(jobs, spec(fmt.Sprintf("other-%d", i), "other"))
	}
	// The submission's tokens are inserted with InsertManyTx, so River's driver has detected the
	// server (queue.ErrNotBatched) before the reports.
	g := submitCommitted(t, pool, graph, dag.Submission{Name: "g", Jobs: jobs}, 2)
	report := func(t *testing.T) string {
		t.Helper()
		c, ok, err := ClaimNext(ctx, pool, "linux", "w1", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		before := trips.n.Load()
		res, err := graph.Report(ctx, pool, queue.BuildReportArgs{JobID: c.JobID, Attempt: c.Attempt, LeaseToken: c.LeaseToken, Outcome: queue.BuildSucceeded}, nil)
		require.NoError(t, err)
		require.True(t, res.Applied)
		require.Equal(t, int64(2), trips.n.Load()-before, "round trips of the report of %s", c.Name)
		return c.Name
	}
	var reported []string
	for range 4 {
		reported = append(reported, report(t))
	}
	require.Subset(t, reported, []string{"a", "c"}, "the reports that released b and d were measured")

	group, err := GetGroup(ctx, pool, g)
	require.NoError(t, err)
	require.Equal(t, 4, group.Counts[Complete])
	require.Equal(t, 1+2*64, group.Counts[Ready])
	var tokens []string
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT args->>'job_name' FROM river_job WHERE kind = 'build_run' AND args->>'job_name' IN ('b', 'd') ORDER BY 1`)
		if err != nil {
			return err
		}
		tokens, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}))
	require.Equal(t, []string{"b", "d"}, tokens, "the released jobs' tokens committed with the reports")
	require.Equal(t, int32(0), pool.Stat().AcquiredConns())
	for range pool.Stat().IdleConns() {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus(), "a connection back in the pool is in no transaction")
	}
}
