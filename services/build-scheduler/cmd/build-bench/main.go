// Command build-bench measures the scheduler's own cost per job on a 10,000-job graph (a wide
// fan-out, diamonds and 20-deep chains) with instant jobs and 8 worker slots, against a floor
// measured in the same run: a bare loop of single-row UPDATE+COMMIT on the same Postgres. Only
// the ratio is comparable between machines. It also runs the readiness query (readiness
// recomputed by a query after each completion, with no counter) on the same graph, for a bounded time, to show the
// gap the counter closes.
//
// Each slot claims with ClaimNext and applies its report with Report, in two transactions as a
// build-worker does today: the claim one statement committed asynchronously, the report BEGIN and
// its statement in one round trip, the released jobs' tokens (inserted quietly and announced
// after the commit by a goroutine of their own), COMMIT, waiting for the WAL flush as the report
// of a build of BUILD_WORKER_DURABLE_AFTER or longer does. River's fetch and the
// token's end (which a build-worker commits in its report's transaction) are left out, as they
// are River's cost, not the scheduler's.
//
// -profile prints the time spent in each statement (round trip, lock waits and execution).
//
//	go run ./cmd/build-bench -db postgres://postgres@127.0.0.1:5432/postgres
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/benchdb"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// targetRatio is the target: claim+report at 60 % of the floor's throughput or more.
const targetRatio = 0.60

func main() {
	db := flag.String("db", benchdb.Server(), "Postgres server (a scratch database is created and dropped)")
	slots := flag.Int("slots", 8, "concurrent worker slots")
	rounds := flag.Int("rounds", 5, "how many times the floor and the scheduler each run, taking turns")
	queryFor := flag.Duration("query-for", 20*time.Second, "how long to run the readiness query instead of the counter")
	profile := flag.Bool("profile", false, "print the time spent in each statement after each measurement")
	flag.Parse()
	var trace *statementTimes
	if *profile {
		trace = &statementTimes{}
	}
	if err := run(context.Background(), *db, *slots, max(*rounds, 1), *queryFor, trace, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "build-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, server string, slots, rounds int, queryFor time.Duration, trace *statementTimes, out io.Writer) error {
	var tracer pgx.QueryTracer
	if trace != nil {
		tracer = trace
	}
	pool, _, drop, err := benchdb.Scratch(ctx, server, 16, tracer)
	if err != nil {
		return err
	}
	defer drop()
	plan, err := dag.Validate(benchdb.Graph("bench"), dag.DefaultLimits)
	if err != nil {
		return err
	}
	n := len(plan.Jobs)
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_floor (id int PRIMARY KEY, n int NOT NULL);
		INSERT INTO bench_floor SELECT i, 0 FROM generate_series(1, 1000) i`); err != nil {
		return fmt.Errorf("create floor table: %w", err)
	}
	// The tokens a report inserts are announced after it commits, by a goroutine of their own, as
	// a build-worker does (queue.NewQuietInserter, queue.Announcer): a notification inside the
	// report would hold every report to one per WAL flush.
	tokens, err := queue.NewQuietInserter(nil, queue.BuildScheduler)
	if err != nil {
		return err
	}
	announcer := queue.NewAnnouncer(pool, queue.BuildScheduler, slog.New(slog.DiscardHandler))
	announcing, stopAnnouncing := context.WithCancel(ctx)
	defer stopAnnouncing()
	go func() { _ = announcer.Run(announcing) }()
	graph := &jobgraph.Graph{Tokens: tokens}
	// The floor and the scheduler take turns, rounds times, so that a burst of load from elsewhere
	// on the machine lands on one round, not on one side of every comparison; the median ratio is
	// the figure.
	ratios := make([]float64, rounds)
	for r := range rounds {
		floor, err := measureFloor(ctx, pool, n)
		if err != nil {
			return err
		}
		if trace != nil {
			trace.print(out)
		}
		fmt.Fprintf(out, "round %d floor: %d single-row UPDATE+COMMIT in %s = %.0f/s (%.3f ms each)\n", r+1, n, floor.Round(time.Millisecond), rate(n, floor), ms(floor, n))
		// Earlier rounds leave dead row versions behind that autovacuum would have cleared in a
		// service running at this pace; each round starts from the steady state it keeps.
		if _, err := pool.Exec(ctx, `VACUUM ANALYZE job_graph, group_stripes, groups, river_job`); err != nil {
			return fmt.Errorf("vacuum before round %d: %w", r+1, err)
		}
		took, done, err := drive(ctx, pool, graph, announcer, plan, slots, time.Hour, false)
		if err != nil {
			return err
		}
		ratios[r] = rate(done, took) / rate(n, floor)
		fmt.Fprintf(out, "round %d scheduler (dependency counter): %d jobs, %d slots, %s = %.0f jobs/s, overhead %.3f ms/job; ratio to floor %.0f%%\n",
			r+1, done, slots, took.Round(time.Millisecond), rate(done, took), ms(took, done), 100*ratios[r])
		if trace != nil {
			trace.print(out)
		}
	}
	slices.Sort(ratios)
	med := ratios[rounds/2]
	verdict := "met"
	if med < targetRatio {
		verdict = "MISSED"
	}
	fmt.Fprintf(out, "scheduler/floor, median of %d rounds: %.0f%% (rounds %.0f–%.0f%%); claim+report >= %.0f%% of its floor: %s\n",
		rounds, 100*med, 100*ratios[0], 100*ratios[rounds-1], 100*targetRatio, verdict)
	took, done, err := drive(ctx, pool, graph, announcer, plan, slots, queryFor, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "readiness query (one per completion, no counter): %d of %d jobs in %s = %.0f jobs/s, %.3f ms/job; %d deadlocks retried\n",
		done, n, took.Round(time.Millisecond), rate(done, took), ms(took, done), queryDeadlocks.Load())
	return nil
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
func ms(d time.Duration, n int) float64   { return float64(d.Microseconds()) / 1000 / float64(max(n, 1)) }

// measureFloor runs n single-row UPDATEs, each its own transaction.
func measureFloor(ctx context.Context, pool *pgxpool.Pool, n int) (time.Duration, error) {
	start := time.Now()
	for i := range n {
		if _, err := pool.Exec(ctx, `UPDATE bench_floor SET n = n + 1 WHERE id = $1`, 1+i%1000); err != nil {
			return 0, fmt.Errorf("floor update: %w", err)
		}
	}
	return time.Since(start), nil
}

// drive submits plan as a new group and has slots goroutines claim and complete its jobs until
// the group is final or limit passes. With byQuery, completion flips dependents to ready with the
// readiness query instead of the counter.
func drive(ctx context.Context, pool *pgxpool.Pool, graph *jobgraph.Graph, announcer *queue.Announcer, plan dag.Plan, slots int, limit time.Duration, byQuery bool) (time.Duration, int, error) {
	var g int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) { g, err = graph.SubmitTx(ctx, tx, plan, 3); return err })
	if err != nil {
		return 0, 0, err
	}
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		firstErr atomic.Value
	)
	start := time.Now()
	deadline := start.Add(limit)
	for range slots {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				ok, err := step(ctx, pool, graph, announcer, g, byQuery)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if !ok {
					if finished(ctx, pool, g) {
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	return time.Since(start), int(done.Load()), nil
}

func finished(ctx context.Context, pool *pgxpool.Pool, g int64) bool {
	var open bool
	_ = pool.QueryRow(ctx, `SELECT state IN ('queued', 'dispatching') FROM groups WHERE id = $1`, g).Scan(&open)
	return !open
}

// step claims one job and completes it, in two transactions, and announces the tokens the
// report inserted.
func step(ctx context.Context, pool *pgxpool.Pool, graph *jobgraph.Graph, announcer *queue.Announcer, g int64, byQuery bool) (bool, error) {
	c, ok, err := jobgraph.ClaimNext(ctx, pool, "bench", "bench", time.Minute)
	if err != nil || !ok {
		return false, err
	}
	if byQuery {
		return true, completeByQueryRetrying(ctx, pool, c.JobID, g)
	}
	res, err := graph.Report(ctx, pool, queue.BuildReportArgs{JobID: c.JobID, Attempt: c.Attempt, LeaseToken: c.LeaseToken, Outcome: queue.BuildSucceeded}, nil)
	for _, t := range res.Targets {
		announcer.Announce(queue.BuildQueue(t))
	}
	return true, err
}

// queryDeadlocks counts the readiness-query transactions Postgres aborted as deadlocked: its
// group-wide UPDATE takes row locks in no fixed order, so concurrent completions in one group
// deadlock, and a real scheduler built on that query has to retry them, as this one does.
var queryDeadlocks atomic.Int64

func completeByQueryRetrying(ctx context.Context, pool *pgxpool.Pool, jobID, g int64) error {
	for {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return completeByQuery(ctx, tx, jobID, g) })
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
			return err
		}
		queryDeadlocks.Add(1)
	}
}

// completeByQuery is the readiness query: mark the job complete, then find every waiting job of
// the group whose dependencies are all complete.
func completeByQuery(ctx context.Context, tx pgx.Tx, jobID, g int64) error {
	if _, err := tx.Exec(ctx, `UPDATE job_graph SET state = 'complete' WHERE id = $1 AND state = 'running'`, jobID); err != nil {
		return fmt.Errorf("complete job %d: %w", jobID, err)
	}
	_, err := tx.Exec(ctx, `
		UPDATE job_graph j SET state = 'ready' WHERE j.group_id = $1 AND j.state = 'waiting_on_dependency'
			AND NOT EXISTS (SELECT FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state <> 'complete')`, g)
	if err != nil {
		return fmt.Errorf("readiness query for group %d: %w", g, err)
	}
	return nil
}
