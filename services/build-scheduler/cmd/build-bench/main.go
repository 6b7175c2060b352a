// Command build-bench measures the scheduler's own cost per build on a 10,000-job graph (a wide
// fan-out, diamonds and 20-deep chains) with instant jobs and 8 worker slots, against a floor
// measured in the same run: a bare loop of single-row UPDATE+COMMIT on the same Postgres. Only
// the ratio is comparable between machines. It also runs the readiness query (readiness
// recomputed by a query after each completion, with no counter) on the same graph, for a bounded
// time, to show the gap the counter closes.
//
// A build is a build_run River job, which River's fetch hands to a worker: what the scheduler
// adds on a build's path is the worker's report. Each slot applies it with Graph.Report as a
// build-worker does: BEGIN and the report's statement in one round trip, the River jobs of the
// dependents it released (inserted quietly, and announced after the commit by a goroutine of
// their own), COMMIT, waiting for the WAL flush as the report of a build of
// BUILD_WORKER_DURABLE_AFTER or longer does. River's fetch and its completion of a succeeded
// build's River job are left out, as they are River's cost, the same for any River job
// (build-e2e-bench measures them against River's floors). In their place one goroutine reads the
// group's available build_run rows from river_job, without writing them, and hands their args to
// the slots in River's order (see fetcher); its reads run on the same database during the
// measurement, and their count is printed. The figure is the report alone, so it does not
// compare with figures from before builds were River jobs, when the scheduler ran a statement of
// its own before each build as well.
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
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/benchdb"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// targetRatio is the target: the scheduler's work a build, its report, at 60 % of the floor's
// throughput or more.
const targetRatio = 0.60

// target is the bench's jobs' target.
const target = "bench"

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

// bench is what every measurement shares.
type bench struct {
	pool      *pgxpool.Pool
	graph     *jobgraph.Graph
	announcer *queue.Announcer
	plan      dag.Plan
	slots     int
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
	plan, err := dag.Validate(benchdb.Graph(target), dag.DefaultLimits)
	if err != nil {
		return err
	}
	n := len(plan.Jobs)
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_floor (id int PRIMARY KEY, n int NOT NULL);
		INSERT INTO bench_floor SELECT i, 0 FROM generate_series(1, 1000) i`); err != nil {
		return fmt.Errorf("create floor table: %w", err)
	}
	// The River jobs a report inserts are announced after it commits, by a goroutine of their own,
	// as a build-worker does (queue.NewQuietInserter, queue.Announcer): a notification inside the
	// report would hold every report to one per WAL flush.
	quiet, err := queue.NewQuietInserter(nil, queue.BuildScheduler)
	if err != nil {
		return err
	}
	announcer := queue.NewAnnouncer(pool, queue.BuildScheduler, slog.New(slog.DiscardHandler))
	announcing, stopAnnouncing := context.WithCancel(ctx)
	defer stopAnnouncing()
	go func() { _ = announcer.Run(announcing) }()
	b := &bench{pool: pool, graph: &jobgraph.Graph{Builds: quiet}, announcer: announcer, plan: plan, slots: slots}
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
		d, err := b.drive(ctx, time.Hour, false)
		if err != nil {
			return err
		}
		ratios[r] = rate(d.done, d.took) / rate(n, floor)
		fmt.Fprintf(out, "round %d scheduler (dependency counter): %d builds reported, %d slots, %s = %.0f builds/s, overhead %.3f ms/build; ratio to floor %.0f%%; river_job read %d times in River's stead\n",
			r+1, d.done, slots, d.took.Round(time.Millisecond), rate(d.done, d.took), ms(d.took, d.done), 100*ratios[r], d.reads)
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
	fmt.Fprintf(out, "scheduler/floor, median of %d rounds: %.1f%% (rounds %.0f–%.0f%%); the report (River's fetch left out) >= %.0f%% of its floor: %s\n",
		rounds, 100*med, 100*ratios[0], 100*ratios[rounds-1], 100*targetRatio, verdict)
	d, err := b.drive(ctx, queryFor, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "readiness query (one per completion, no counter): %d of %d jobs in %s = %.0f jobs/s, %.3f ms/job; %d deadlocks retried\n",
		d.done, n, d.took.Round(time.Millisecond), rate(d.done, d.took), ms(d.took, d.done), queryDeadlocks.Load())
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

// stallAfter is how long the slots may find no build to take before the bench gives up: a
// report takes milliseconds, so a group whose next builds stay out of sight that long has lost
// them (inserted, for instance, in a state River's fetch does not take).
const stallAfter = 10 * time.Second

// driven is one group's run: how long it took, the builds reported and the reads of river_job.
type driven struct {
	took        time.Duration
	done, reads int
}

// drive submits the plan as a new group and has the slots take its builds in River's order and
// report them until every job is done or limit passes. With byQuery, completion flips dependents
// to ready with the readiness query instead of the counter.
func (b *bench) drive(ctx context.Context, limit time.Duration, byQuery bool) (driven, error) {
	f, err := newFetcher(ctx, b.pool, queue.BuildQueue(target), b.slots)
	if err != nil {
		return driven{}, err
	}
	var g int64
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) (err error) { g, err = b.graph.SubmitTx(ctx, tx, b.plan, 3); return err })
	if err != nil {
		return driven{}, err
	}
	n := int64(len(b.plan.Jobs))
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		firstErr atomic.Value
	)
	fail := func(err error) { firstErr.CompareAndSwap(nil, err) }
	reading, stopReading := context.WithCancel(ctx)
	defer stopReading()
	wg.Go(func() {
		if err := f.run(reading); err != nil {
			fail(err)
		}
	})
	start := time.Now()
	deadline := start.Add(limit)
	var progress atomic.Int64 // when the last report ended, in Unix nanoseconds
	progress.Store(start.UnixNano())
	var slots sync.WaitGroup
	for range b.slots {
		slots.Go(func() {
			for done.Load() < n && firstErr.Load() == nil && time.Now().Before(deadline) {
				build, ticket, ok := f.take()
				if !ok {
					if time.Since(time.Unix(0, progress.Load())) > stallAfter {
						fail(fmt.Errorf("group %d: no build_run River job available for %s with %d of its %d builds reported", g, stallAfter, done.Load(), n))
					}
					time.Sleep(time.Millisecond)
					continue
				}
				err := b.step(ctx, build, g, byQuery)
				f.end(ticket)
				if err != nil {
					fail(err)
					return
				}
				done.Add(1)
				progress.Store(time.Now().UnixNano())
			}
		})
	}
	slots.Wait()
	took := time.Since(start)
	stopReading()
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return driven{}, err
	}
	if !byQuery && !finished(ctx, b.pool, g) {
		return driven{}, fmt.Errorf("group %d still open after %d of its %d builds reported", g, done.Load(), n)
	}
	return driven{took: took, done: int(done.Load()), reads: f.reads}, nil
}

func finished(ctx context.Context, pool *pgxpool.Pool, g int64) bool {
	var open bool
	_ = pool.QueryRow(ctx, `SELECT state IN ('queued', 'dispatching') FROM groups WHERE id = $1`, g).Scan(&open)
	return !open
}

// step reports the build as succeeded, as the worker River's fetch handed it to would once its
// command exited 0, and announces the River jobs the report inserted.
func (b *bench) step(ctx context.Context, build fetched, g int64, byQuery bool) error {
	a := build.args
	if byQuery {
		return b.completeByQueryRetrying(ctx, a.JobID, g)
	}
	res, err := b.graph.Report(ctx, b.pool, jobgraph.Report{
		JobID: a.JobID, Attempt: a.Attempt, Outcome: queue.BuildSucceeded, AsBuilt: fmt.Sprintf("%s@%d/%d", a.JobName, a.JobID, a.Attempt),
		WorkerID: "build-bench", StartedAt: time.Now(),
	}, nil)
	if err != nil {
		return err
	}
	if !res.Applied {
		return fmt.Errorf("the report of job %d attempt %d (River job %d) changed nothing", a.JobID, a.Attempt, build.id)
	}
	queues := make([]string, len(res.Targets))
	for i, t := range res.Targets {
		queues[i] = queue.BuildQueue(t)
	}
	b.announcer.Announce(queues...)
	return nil
}

// queryDeadlocks counts the readiness-query transactions Postgres aborted as deadlocked: its
// group-wide UPDATE takes row locks in no fixed order, so concurrent completions in one group
// deadlock, and a real scheduler built on that query has to retry them, as this one does.
var queryDeadlocks atomic.Int64

func (b *bench) completeByQueryRetrying(ctx context.Context, jobID, g int64) error {
	for {
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error { return b.completeByQuery(ctx, tx, jobID, g) })
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
			return err
		}
		queryDeadlocks.Add(1)
	}
}

// completeByQuery is the readiness query: mark the job complete, then find every waiting job of
// the group whose dependencies are all complete, and insert their River jobs, in River's order,
// as the counter's report does.
func (b *bench) completeByQuery(ctx context.Context, tx pgx.Tx, jobID, g int64) error {
	if _, err := tx.Exec(ctx, `UPDATE job_graph SET state = 'complete' WHERE id = $1 AND state IN ('ready', 'running')`, jobID); err != nil {
		return fmt.Errorf("complete job %d: %w", jobID, err)
	}
	rows, err := tx.Query(ctx, `
		UPDATE job_graph j SET state = 'ready', attempt = j.attempt + 1 WHERE j.group_id = $1 AND j.state = 'waiting_on_dependency'
			AND NOT EXISTS (SELECT FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state <> 'complete')
		RETURNING j.id, j.name, j.target, j.attempt, j.fetch_rank, j.command, j.timeout_ms`, g)
	if err != nil {
		return fmt.Errorf("readiness query for group %d: %w", g, err)
	}
	var params []river.InsertManyParams
	for rows.Next() {
		a := queue.BuildRunArgs{GroupID: g}
		var rank int
		if err := rows.Scan(&a.JobID, &a.JobName, &a.Target, &a.Attempt, &rank, &a.Command, &a.TimeoutMS); err != nil {
			rows.Close()
			return fmt.Errorf("readiness query for group %d: %w", g, err)
		}
		params = append(params, river.InsertManyParams{Args: a.InOrder(rank)})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("readiness query for group %d: %w", g, err)
	}
	if len(params) == 0 {
		return nil
	}
	if _, err := b.graph.Builds.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("insert the River jobs of %d ready jobs of group %d: %w", len(params), g, err)
	}
	return nil
}
