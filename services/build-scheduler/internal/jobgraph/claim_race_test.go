package jobgraph

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/postgres"
	"drover.dev/shared/testdb"
)

// staleFirst runs its first statement on stale, a transaction whose snapshot is older than what
// follows, and every later one on db: the first statement of a claim whose snapshot was taken
// before a job became ready, the retries not.
type staleFirst struct {
	stale, db postgres.DBTX
	used      bool
}

func (s *staleFirst) next() postgres.DBTX {
	if s.used {
		return s.db
	}
	s.used = true
	return s.stale
}

func (s *staleFirst) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return s.next().Exec(ctx, sql, args...)
}

func (s *staleFirst) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return s.next().Query(ctx, sql, args...)
}

func (s *staleFirst) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return s.next().QueryRow(ctx, sql, args...)
}

// A claim whose snapshot predates a job becoming ready, and whose one visible ready job another
// claim (with a newer snapshot) holds, finds nothing; ClaimNext sends it again and takes the new
// job. Without the retry the token claimed nothing and the new job waited, ready with no token,
// for the reaper's grace.
func TestClaimWithAStaleSnapshotTriesAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t, "build_scheduler")
	graph := newGraph(t)
	submitCommitted(t, pool, graph, dag.Submission{Name: "g", Jobs: []dag.JobSpec{
		spec("x", "race"), spec("z", "other"), spec("y", "race", "z"),
	}}, 2)

	// The slow claim's snapshot: x is ready, y is not yet.
	stale, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = stale.Rollback(ctx) }()
	_, err = stale.Exec(ctx, `SELECT 1`)
	require.NoError(t, err)

	// y becomes ready (and gets its token).
	z, ok, err := ClaimNext(ctx, pool, "other", "w0", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	res, err := graph.Report(ctx, pool, queue.BuildReportArgs{JobID: z.JobID, Attempt: z.Attempt, LeaseToken: z.LeaseToken, Outcome: queue.BuildSucceeded}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"race"}, res.Targets)

	// A fast claim, with y's token, takes x (the older job) and holds it.
	fast, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = fast.Rollback(ctx) }()
	x, ok, err := ClaimNext(ctx, fast, "race", "w1", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "x", x.Name)

	// The slow claim sees only x, held: SKIP LOCKED skips it. Sent again, it sees y.
	got, ok, err := ClaimNext(ctx, &staleFirst{stale: stale, db: pool}, "race", "w2", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "the slow claim found nothing: y is left ready without a token")
	require.Equal(t, "y", got.Name)
	require.NoError(t, fast.Commit(ctx))
}
