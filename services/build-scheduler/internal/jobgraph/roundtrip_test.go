package jobgraph

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

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

// A build-worker's report is two round trips (BEGIN with the report's statement, then the
// COMMIT), plus one for the insert of the River jobs of the jobs it releases, with a quiet inserter
// as the worker's (whose notification, after the queue's first, the worker sends after the
// commit); the connection goes back to the pool in no transaction.
func TestReportRoundTrips(t *testing.T) {
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

	builds, err := queue.NewQuietInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	graph := &Graph{Builds: builds}
	// Jobs of another target, never run, so that no report empties its stripe (each stripe
	// holds two jobs or more) and settles the group: that would take round trips of its own.
	jobs := []dag.JobSpec{spec("a", "linux"), spec("b", "linux", "a"), spec("c", "linux"), spec("d", "linux", "c"), spec("e", "linux")}
	for i := range 2 * 64 {
		jobs = append(jobs, spec(fmt.Sprintf("other-%d", i), "other"))
	}
	// The submission inserts the linux queue's first River jobs, which the quiet inserter notifies.
	g := submitCommitted(t, pool, graph, dag.Submission{Name: "g", Jobs: jobs}, 2)
	// A worker's marker has made the group dispatching; otherwise its first report does, in a
	// round trip of its own.
	require.NoError(t, (&Started{Groups: []int64{g}}).Mark(ctx, pool))
	trips.n.Store(0)
	var f fetcher
	for range 5 {
		c, ok, err := f.take(ctx, pool, "linux")
		require.NoError(t, err)
		require.True(t, ok)
		before := trips.n.Load()
		res, err := graph.Report(ctx, pool, reportOf(c, queue.BuildSucceeded), nil)
		require.NoError(t, err)
		require.True(t, res.Applied)
		want := int64(2)
		if c.Name == "a" || c.Name == "c" {
			want = 3 // releases b or d
		}
		require.Equal(t, want, trips.n.Load()-before, "round trips of the report of %s", c.Name)
	}

	group, err := GetGroup(ctx, pool, g)
	require.NoError(t, err)
	require.Equal(t, 5, group.Counts[Complete])
	require.Equal(t, 2*64, group.Counts[Ready])
	var released []string
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT args->>'job_name' FROM river_job WHERE kind = 'build_run' AND args->>'job_name' IN ('b', 'd') ORDER BY 1`)
		if err != nil {
			return err
		}
		released, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}))
	require.Equal(t, []string{"b", "d"}, released, "the released jobs' River jobs committed with the reports")
	require.Equal(t, int32(0), pool.Stat().AcquiredConns())
	for range pool.Stat().IdleConns() {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus(), "a connection back in the pool is in no transaction")
	}
}
