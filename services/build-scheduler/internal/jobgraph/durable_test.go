package jobgraph

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/testdb"
)

// The build-worker's connections commit asynchronously (BUILD_WORKER_SYNCHRONOUS_COMMIT=off);
// a report commits synchronously on them all the same, a lazy report (ReportLazily) does not, and
// the setting lasts its transaction only.
func TestReportCommitsSynchronouslyOnAnAsynchronousConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(testdb.New(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", "build_scheduler,public")
	q.Set("synchronous_commit", "off") // a run-time parameter of every connection, as the worker's pool has it
	u.RawQuery = q.Encode()
	pool := testdb.NewPoolFor(t, u.String())
	setting := func(t *testing.T, db interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) string {
		t.Helper()
		var s string
		require.NoError(t, db.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&s))
		return s
	}
	require.Equal(t, "off", setting(t, pool))

	graph := testGraph(t)
	g := submitCommitted(t, pool, graph, dag.Submission{Name: "g", Jobs: []dag.JobSpec{spec("a", "linux"), spec("b", "linux", "a")}}, 2)
	var f fetcher
	c, ok, err := f.take(ctx, pool, "linux")
	require.NoError(t, err)
	require.True(t, ok)

	// The report.
	args := reportOf(c, queue.BuildSucceeded)
	var inReport string
	res, err := graph.Report(ctx, pool, args, func(tx pgx.Tx, _ Result) error {
		inReport = setting(t, tx)
		return nil
	})
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, "on", inReport, "the report's commit waits for the WAL flush")
	group, err := GetGroup(ctx, pool, g)
	require.NoError(t, err)
	require.Equal(t, map[JobState]int{Complete: 1, Ready: 1}, group.Counts)

	// A lazy report: the setting goes back off in its first round trip, after the statement.
	c, ok, err = f.take(ctx, pool, "linux")
	require.NoError(t, err)
	require.True(t, ok)
	args = reportOf(c, queue.BuildSucceeded)
	res, err = graph.ReportLazily(ctx, pool, args, func(tx pgx.Tx, _ Result) error {
		inReport = setting(t, tx)
		return nil
	})
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, "off", inReport, "a lazy report's commit does not wait for the WAL flush")
	group, err = GetGroup(ctx, pool, g)
	require.NoError(t, err)
	require.Equal(t, map[JobState]int{Complete: 2}, group.Counts)

	// Set for the transaction only: every connection of the pool, those the reports ran on
	// included, is back to off.
	var conns []*pgxpool.Conn
	for range pool.Stat().TotalConns() {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		conns = append(conns, conn)
	}
	for _, conn := range conns {
		require.Equal(t, "off", setting(t, conn))
	}
}
