package jobgraph

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/testdb"
)

type testBundle struct {
	tx    pgx.Tx
	graph *Graph
	taken []int64 // the River jobs take has handed out
}

func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	return &testBundle{tx: testdb.Tx(t, "build_scheduler"), graph: testGraph(t)}, context.Background()
}

// testGraph is a Graph with an insert-only River client on the build_scheduler schema.
func testGraph(t *testing.T) *Graph {
	t.Helper()
	builds, err := queue.NewInserter(nil, queue.BuildScheduler)
	require.NoError(t, err)
	return &Graph{Builds: builds}
}

func spec(name, target string, deps ...string) dag.JobSpec {
	return dag.JobSpec{Name: name, Target: target, Command: []string{"true"}, DependsOn: deps}
}

func (b *testBundle) submit(t *testing.T, jobs ...dag.JobSpec) int64 {
	t.Helper()
	plan, err := dag.Validate(dag.Submission{Name: "g", Jobs: jobs}, dag.DefaultLimits)
	require.NoError(t, err)
	id, err := b.graph.SubmitTx(context.Background(), b.tx, plan, 2)
	require.NoError(t, err)
	return id
}

// take hands out the next build of target as River's fetch would (priority, scheduled_at, id)
// among the available River jobs it has not handed out yet, and requires there is one.
func (b *testBundle) take(t *testing.T, target string) Build {
	t.Helper()
	build, ok := next(t, b.tx, target, b.taken)
	require.True(t, ok, "no build waiting for %s", target)
	b.taken = append(b.taken, build.riverID)
	return build.Build
}

// fetched is a build and the River job that carries it.
type fetched struct {
	Build
	riverID int64
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// next reads the build River's fetch would hand out next on target's queue, skipping the River
// jobs in taken. It reads River's table; it writes nothing.
func next(t *testing.T, db querier, target string, taken []int64) (fetched, bool) {
	t.Helper()
	f, ok, err := nextBuild(context.Background(), db, target, taken)
	require.NoError(t, err)
	return f, ok
}

// nextBuild is next without a test, for goroutines.
func nextBuild(ctx context.Context, db querier, target string, taken []int64) (fetched, bool, error) {
	var (
		id   int64
		args queue.BuildRunArgs
	)
	err := db.QueryRow(ctx, `SELECT id, args FROM river_job
		WHERE kind = 'build_run' AND queue = $1 AND state = 'available' AND NOT id = ANY($2)
		ORDER BY priority, scheduled_at, id LIMIT 1`, queue.BuildQueue(target), append([]int64{0}, taken...)).Scan(&id, &args)
	if errors.Is(err, pgx.ErrNoRows) {
		return fetched{}, false, nil
	}
	if err != nil {
		return fetched{}, false, err
	}
	return fetched{Build: BuildOf(args), riverID: id}, true, nil
}

// fetcher hands out builds to concurrent workers as River's fetch would, each River job once.
type fetcher struct {
	mu    sync.Mutex
	taken []int64
}

// take hands out the next build of target, if there is one.
func (f *fetcher) take(ctx context.Context, db querier, target string) (Build, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok, err := nextBuild(ctx, db, target, f.taken)
	if ok {
		f.taken = append(f.taken, b.riverID)
	}
	return b.Build, ok, err
}

// reportOf is the report of build c ending with outcome.
func reportOf(c Build, outcome queue.BuildOutcome) Report {
	return Report{JobID: c.JobID, Attempt: c.Attempt, Outcome: outcome, AsBuilt: c.Name + "/1.0", WorkerID: "w1", StartedAt: time.Now()}
}

func (b *testBundle) report(t *testing.T, c Build, outcome queue.BuildOutcome) Result {
	t.Helper()
	res, err := b.graph.ReportTx(context.Background(), b.tx, reportOf(c, outcome))
	require.NoError(t, err)
	return res
}

func (b *testBundle) group(t *testing.T, id int64) Group {
	t.Helper()
	g, err := GetGroup(context.Background(), b.tx, id)
	require.NoError(t, err)
	return g
}

func (b *testBundle) state(t *testing.T, groupID int64, name string) JobState {
	t.Helper()
	var s JobState
	require.NoError(t, b.tx.QueryRow(context.Background(),
		`SELECT state::text FROM job_graph WHERE group_id = $1 AND name = $2`, groupID, name).Scan(&s))
	return s
}

// builds counts the River jobs in a target's queue.
func (b *testBundle) builds(t *testing.T, target string) int {
	t.Helper()
	var n int
	require.NoError(t, b.tx.QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE kind = 'build_run' AND queue = $1`, queue.BuildQueue(target)).Scan(&n))
	return n
}
