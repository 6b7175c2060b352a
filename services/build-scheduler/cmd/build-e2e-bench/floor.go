package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"drover.dev/queue"
)

// floorArgs is a River job of the floor. A job of a throughput round (Round > 0) runs the
// group's instant command when Exec is set (River plus the process, as a build is) and nothing
// otherwise (River's bare figure). A chain job (Chain > 0) with Next > 0 inserts the next job
// of its chain first.
type floorArgs struct {
	Round int  `json:"round,omitempty"`
	Exec  bool `json:"exec,omitempty"`
	Chain int  `json:"chain"`
	Next  int  `json:"next"`
}

func (floorArgs) Kind() string { return "bench_floor" }

func (floorArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: floorQueue} }

const floorQueue = "river_floor"

type floorWorker struct {
	river.WorkerDefaults[floorArgs]
	pool    *pgxpool.Pool
	command []string
	worked  atomic.Int64
}

func (w *floorWorker) Work(ctx context.Context, job *river.Job[floorArgs]) error {
	defer w.worked.Add(1)
	if job.Args.Exec {
		// The same fork/exec of the same command as a build: PATH looked up, waited for.
		return exec.CommandContext(ctx, w.command[0], w.command[1:]...).Run() //nolint:gosec // the bench's own command
	}
	if job.Args.Next == 0 {
		return nil
	}
	c := river.ClientFromContext[pgx.Tx](ctx)
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		_, err := c.InsertTx(ctx, tx, floorArgs{Chain: job.Args.Chain, Next: job.Args.Next - 1}, nil)
		return err
	})
}

// floor is o.workers River clients of o.slots workers each, built as the services build theirs
// (queue.NewClient) with the workers' fetch settings, on the build_scheduler schema of the
// scratch database.
type floor struct {
	pool    *pgxpool.Pool
	ins     *queue.Client
	worker  *floorWorker
	clients []*queue.Client
	rounds  int
}

func startFloor(ctx context.Context, pool *pgxpool.Pool, o options, command []string) (*floor, error) {
	f := &floor{pool: pool, worker: &floorWorker{pool: pool, command: command}}
	workers := river.NewWorkers()
	river.AddWorker(workers, f.worker)
	ins, err := queue.NewInserter(pool, queue.BuildScheduler)
	if err != nil {
		return nil, err
	}
	f.ins = ins
	for i := range o.workers {
		c, err := queue.NewClient(pool, queue.BuildScheduler, queue.ClientConfig{
			ID: fmt.Sprintf("river-floor-%d", i), Queues: map[string]int{floorQueue: o.slots}, Workers: workers, Fetch: o.fetch,
		})
		if err != nil {
			f.stop()
			return nil, err
		}
		if err := c.Start(ctx); err != nil {
			f.stop()
			return nil, err
		}
		f.clients = append(f.clients, c)
	}
	return f, nil
}

func (f *floor) stop() {
	for _, c := range f.clients {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = c.Stop(stopCtx)
		cancel()
	}
	f.clients = nil
}

// throughput inserts n jobs at once and returns how long River took from the first insert to
// the last completion, in jobs/s.
func (f *floor) throughput(ctx context.Context, n int, exec bool) (float64, error) {
	f.rounds++
	round := f.rounds
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: floorArgs{Round: round, Exec: exec}}
	}
	start := f.worker.worked.Load()
	if _, err := f.ins.InsertMany(ctx, params); err != nil {
		return 0, fmt.Errorf("insert round %d: %w", round, err)
	}
	// Counted in the process while the round runs, so that waiting costs the database nothing.
	for f.worker.worked.Load()-start < int64(n) {
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
	if err := f.waitCompleted(ctx, `(args->>'round')::int = $2`, round, n); err != nil {
		return 0, err
	}
	var took float64
	err := f.pool.QueryRow(ctx, `SELECT extract(epoch FROM max(finalized_at) - min(created_at)) FROM river_job
		WHERE queue = $1 AND (args->>'round')::int = $2`, floorQueue, round).Scan(&took)
	if err != nil {
		return 0, err
	}
	return float64(n) / took, nil
}

// chains runs n chains of depth jobs, each inserting the next, and returns their insert → start
// latency: River's own dispatch latency.
func (f *floor) chains(ctx context.Context, n, depth int) (p50, p99 time.Duration, err error) {
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: floorArgs{Chain: i + 1, Next: depth - 1}}
	}
	if _, err := f.ins.InsertMany(ctx, params); err != nil {
		return 0, 0, fmt.Errorf("insert chains: %w", err)
	}
	if err := f.waitCompleted(ctx, `(args->>'chain')::int > $2`, 0, n*depth); err != nil {
		return 0, 0, err
	}
	var s50, s99 float64
	err = f.pool.QueryRow(ctx, `
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY wait), percentile_cont(0.99) WITHIN GROUP (ORDER BY wait)
		FROM (SELECT extract(epoch FROM attempted_at - created_at) AS wait FROM river_job
			WHERE queue = $1 AND (args->>'chain')::int > 0 AND (args->>'next')::int < $2) w`, floorQueue, depth-1).Scan(&s50, &s99)
	return seconds(s50), seconds(s99), err
}

// waitCompleted waits until n floor jobs matching where ($2 = arg) are completed.
func (f *floor) waitCompleted(ctx context.Context, where string, arg, n int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var done int
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE queue = $1 AND state = 'completed' AND `+where, floorQueue, arg).Scan(&done)
		if err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the River floor's jobs still not completed after 10 minutes")
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
