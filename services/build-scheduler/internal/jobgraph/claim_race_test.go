package jobgraph

import (
	"context"
	"strings"
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

// staleClaims sends its first n claim statements on stale, a transaction whose snapshot is older
// than what follows, and every other statement on db: claims whose snapshots were taken before a
// job became ready, each losing the jobs it sees to newer claims, then one that is not.
type staleClaims struct {
	stale, db postgres.DBTX
	n         int
}

func (s *staleClaims) next(sql string) postgres.DBTX {
	if s.n > 0 && strings.Contains(sql, "name: JobClaim ") {
		s.n--
		return s.stale
	}
	return s.db
}

func (s *staleClaims) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return s.next(sql).Exec(ctx, sql, args...)
}

func (s *staleClaims) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return s.next(sql).Query(ctx, sql, args...)
}

func (s *staleClaims) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return s.next(sql).QueryRow(ctx, sql, args...)
}

// A claim whose snapshot predates a job becoming ready, and whose one visible ready job another
// claim (with a newer snapshot) holds, finds nothing; ClaimNext sends it again and takes the new
// job. Without the retry the token claimed nothing and the new job waited, ready with no token,
// for the reaper's grace.
func TestClaimWithAStaleSnapshotTriesAgain(t *testing.T) {
	t.Parallel()
	testStaleClaims(t, 1)
}

// The same race lost five times in a row, as a slow claim can on a loaded machine when newer
// claims keep taking what it sees: ClaimNext keeps trying while the target has a ready job. It
// gave up after three statements before, and the token was lost.
func TestClaimKeepsTryingWhileAJobIsReady(t *testing.T) {
	t.Parallel()
	testStaleClaims(t, 5)
}

// testStaleClaims has the first stale claim statements of a claim see x alone, held by another
// claim, while y is ready: the claim must end with y.
func testStaleClaims(t *testing.T, stale int) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.NewPool(t, "build_scheduler")
	graph := newGraph(t)
	submitCommitted(t, pool, graph, dag.Submission{Name: "g", Jobs: []dag.JobSpec{
		spec("x", "race"), spec("z", "other"), spec("y", "race", "z"),
	}}, 2)

	// The slow claim's snapshot: x is ready, y is not yet.
	old, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = old.Rollback(ctx) }()
	_, err = old.Exec(ctx, `SELECT 1`)
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
	got, ok, err := ClaimNext(ctx, &staleClaims{stale: old, db: pool, n: stale}, "race", "w2", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "the slow claim found nothing: y is left ready without a token")
	require.Equal(t, "y", got.Name)
	require.NoError(t, fast.Commit(ctx))
}

// A ready job held by a transaction that does not claim it (a recount locks every unfinished job
// of its group) is skipped by a claim; ClaimNext keeps trying while the job is ready and takes it
// once the lock is gone. Before, the claim gave up after three statements and its token was lost:
// the job waited for the reaper's grace.
func TestClaimWaitsOutAJobHeldByARecount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t, "build_scheduler")
	graph := newGraph(t)
	groupID := submitCommitted(t, pool, graph, dag.Submission{Name: "g", Jobs: []dag.JobSpec{spec("x", "held")}}, 2)

	recount, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = recount.Rollback(ctx) }()
	require.NoError(t, queries.JobLockUnfinished(ctx, recount, groupID))

	type result struct {
		c   Claim
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, ok, err := ClaimNext(ctx, pool, "held", "w1", time.Minute)
		done <- result{c, ok, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("the claim ended while x was ready and held (ok %v, err %v): its token is lost", r.ok, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, recount.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.True(t, r.ok, "x is left ready without a token")
	require.Equal(t, "x", r.c.Name)
}
