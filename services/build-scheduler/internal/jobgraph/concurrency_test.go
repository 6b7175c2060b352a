package jobgraph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/testdb"
)

// committed runs fn in its own committed transaction.
func committed(t *testing.T, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, fn))
}

// submitCommitted validates sub and submits it on pool in a committed transaction of its own.
func submitCommitted(t *testing.T, pool *pgxpool.Pool, graph *Graph, sub dag.Submission, maxAttempts int) int64 {
	t.Helper()
	plan, err := dag.Validate(sub, dag.DefaultLimits)
	require.NoError(t, err)
	var g int64
	committed(t, pool, func(tx pgx.Tx) (err error) {
		g, err = graph.SubmitTx(context.Background(), tx, plan, maxAttempts)
		return err
	})
	return g
}

// inTx runs fn in its own transaction; it is safe from any goroutine (no t.FailNow). Nothing is
// retried: with the package's lock order no transaction is ever aborted as deadlocked, and a
// deadlock fails the test.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, fn)
}

func TestTwoDependenciesCompletingAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t, "build_scheduler")
	graph := testGraph(t)

	for round := range 10 {
		target := fmt.Sprint("fanin", round)
		g := submitCommitted(t, pool, graph, dag.Submission{Name: "fan-in", Jobs: []dag.JobSpec{
			spec("a", target), spec("b", target), spec("c", target, "a", "b"),
		}}, 3)
		var taken [2]Build
		var f fetcher
		for i := range taken {
			var ok bool
			var err error
			taken[i], ok, err = f.take(ctx, pool, target)
			require.NoError(t, err)
			require.True(t, ok)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, len(taken))
		for i, c := range taken {
			wg.Go(func() {
				<-start
				errs[i] = inTx(ctx, pool, func(tx pgx.Tx) error {
					_, err := graph.ReportTx(ctx, tx, reportOf(c, queue.BuildSucceeded))
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		var state JobState
		var count, builds int
		require.NoError(t, pool.QueryRow(ctx, `SELECT state::text, waiting_on_count,
			(SELECT count(*) FROM river_job WHERE kind = 'build_run' AND (args->>'job_id')::bigint = j.id
				AND args->>'job_name' = j.name)
			FROM job_graph j WHERE group_id = $1 AND name = 'c'`, g).Scan(&state, &count, &builds))
		require.Equal(t, Ready, state, "round %d", round)
		require.Zero(t, count)
		require.Equal(t, 1, builds, "c is dispatched exactly once, by a River job naming it")
	}
}

// randomGraph builds n jobs, each depending on up to three earlier ones, about one in eight
// failing; it returns the submission and which job names fail.
func randomGraph(rng *rand.Rand, n int) (dag.Submission, map[string]bool) {
	sub := dag.Submission{Name: "random"}
	fails := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("j%d", i)
		var deps []string
		for range rng.IntN(4) {
			if i > 0 {
				if d := fmt.Sprintf("j%d", rng.IntN(i)); !contains(deps, d) {
					deps = append(deps, d)
				}
			}
		}
		sub.Jobs = append(sub.Jobs, spec(name, "linux", deps...))
		fails[name] = rng.IntN(8) == 0
	}
	return sub, fails
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// expectedStates is what the readiness rule says the final states must be: a job runs only when all its
// dependencies completed; otherwise it is dependency_failed.
func expectedStates(sub dag.Submission, fails map[string]bool) map[string]JobState {
	out := map[string]JobState{}
	for _, j := range sub.Jobs { // dependencies come earlier, so one pass suffices
		state := Complete
		for _, d := range j.DependsOn {
			if out[d] != Complete {
				state = DependencyFailed
			}
		}
		if state == Complete && fails[j.Name] {
			state = JobFailed
		}
		out[j.Name] = state
	}
	return out
}

func TestRandomGraphsWithEightConcurrentWorkers(t *testing.T) {
	t.Parallel()

	for seed := range uint64(3) {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := testdb.NewPool(t, "build_scheduler")
			graph := testGraph(t)
			sub, fails := randomGraph(rand.New(rand.NewPCG(seed, 7)), 80)
			g := submitCommitted(t, pool, graph, sub, 3)

			// Bounded: a worker that fails stops the others, and a group that never becomes
			// final fails the test instead of hanging it.
			workCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			var (
				wg sync.WaitGroup
				f  fetcher
			)
			errs := make([]error, 8)
			for w := range errs {
				wg.Go(func() {
					if errs[w] = workUntilDone(workCtx, pool, graph, &f, g, fails, w); errs[w] != nil {
						cancel()
					}
				})
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))

			rows, err := pool.Query(ctx, `SELECT name, state::text FROM job_graph WHERE group_id = $1`, g)
			require.NoError(t, err)
			got := map[string]JobState{}
			for rows.Next() {
				var (
					name  string
					state JobState
				)
				require.NoError(t, rows.Scan(&name, &state))
				got[name] = state
			}
			require.NoError(t, rows.Err())
			require.Equal(t, expectedStates(sub, fails), got)
			drift, err := Drift(ctx, pool)
			require.NoError(t, err)
			require.Empty(t, drift)
		})
	}
}

// workUntilDone takes and reports builds of group g until the group is final. Every fifth report
// is sent twice, as River may deliver it twice.
func workUntilDone(ctx context.Context, pool *pgxpool.Pool, graph *Graph, f *fetcher, g int64, fails map[string]bool, w int) error {
	for n := 0; ; n++ {
		c, ok, err := f.take(ctx, pool, "linux")
		if err != nil {
			return fmt.Errorf("worker %d fetch: %w", w, err)
		}
		if !ok {
			var state GroupState
			if err := pool.QueryRow(ctx, `SELECT state::text FROM groups WHERE id = $1`, g).Scan(&state); err != nil {
				return fmt.Errorf("worker %d: group %d not final: %w", w, g, err)
			}
			if state != GroupQueued && state != GroupDispatching {
				return nil
			}
			time.Sleep(time.Millisecond)
			continue
		}
		outcome := queue.BuildSucceeded
		if fails[c.Name] {
			outcome = queue.BuildFailed
		}
		args := reportOf(c, outcome)
		for range 1 + min(1, n%5/4) {
			if _, err := graph.Report(ctx, pool, args, nil); err != nil {
				return fmt.Errorf("worker %d report of job %d: %w", w, c.JobID, err)
			}
		}
	}
}

// TestCancelAndWatchdogUnderLoad cancels a group while eight workers take and report its jobs
// and watchdog passes and recounts run beside them: every transaction takes its locks in the
// package's order, so none is aborted as deadlocked, and the group ends canceled with every job
// final and no counter drift.
func TestCancelAndWatchdogUnderLoad(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := testdb.NewPool(t, "build_scheduler")
			graph := testGraph(t)
			sub, fails := randomGraph(rand.New(rand.NewPCG(seed, 11)), 120)
			// A job for a target no worker here works keeps the group open until the cancel,
			// however fast the workers finish or fail the rest.
			sub.Jobs = append(sub.Jobs, spec("held", "unworked"))
			g := submitCommitted(t, pool, graph, sub, 3)

			workCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			var (
				wg sync.WaitGroup
				f  fetcher
			)
			errs := make([]error, 10)
			for w := range 8 {
				wg.Go(func() {
					if errs[w] = workUntilDone(workCtx, pool, graph, &f, g, fails, w); errs[w] != nil {
						cancel()
					}
				})
			}
			wg.Go(func() { // the watchdog and an admin's recount, over and over
				for workCtx.Err() == nil && !groupFinal(workCtx, pool, g) {
					errs[8] = inTx(workCtx, pool, func(tx pgx.Tx) error { _, err := graph.WatchTx(workCtx, tx, time.Hour); return err })
					if errs[8] == nil {
						errs[8] = inTx(workCtx, pool, func(tx pgx.Tx) error { _, err := graph.RecountTx(workCtx, tx); return err })
					}
					if errs[8] != nil {
						cancel()
						return
					}
				}
			})
			wg.Go(func() { // cancel once a third of the jobs are final
				for workCtx.Err() == nil && finalJobs(workCtx, pool, g) < len(sub.Jobs)/3 {
					time.Sleep(time.Millisecond)
				}
				errs[9] = inTx(workCtx, pool, func(tx pgx.Tx) error { _, err := graph.CancelTx(workCtx, tx, g, "test"); return err })
			})
			wg.Wait()
			require.NoError(t, errors.Join(errs...))

			var state GroupState
			var open int
			require.NoError(t, pool.QueryRow(ctx, `SELECT state::text, (SELECT count(*) FROM job_graph
				WHERE group_id = $1 AND state NOT IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete')) FROM groups WHERE id = $1`, g).Scan(&state, &open))
			require.Equal(t, GroupCanceled, state)
			require.Zero(t, open)
			drift, err := Drift(ctx, pool)
			require.NoError(t, err)
			require.Empty(t, drift)
		})
	}
}

func groupFinal(ctx context.Context, pool *pgxpool.Pool, g int64) bool {
	var open bool
	err := pool.QueryRow(ctx, `SELECT state IN ('queued', 'dispatching') FROM groups WHERE id = $1`, g).Scan(&open)
	return err == nil && !open
}

func finalJobs(ctx context.Context, pool *pgxpool.Pool, g int64) int {
	var n int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM job_graph WHERE group_id = $1 AND state IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete')`, g).Scan(&n)
	return n
}
