// Command populate-bench measures the populate-worker against floors taken in the same run, on
// databases of its own that it creates, migrates and drops. Its figures (-figures picks some):
//
//   - schedule: schedule_jobs over -keys keys of key_source (one statement writing the jobs rows,
//     and the table's feed job), printing its target (10 s for a million keys) and the ratio to
//     it, and its floor taken just before: the same rows written by a bare INSERT … SELECT into a
//     copy of the jobs table with its indexes (what this machine and server take to write them);
//     then the feeder enqueueing the makes of -jobs of those keys (keys/s, for comparison with
//     the makes it must keep ahead of);
//   - engine: the engine's make loop without River's fetch: reserve + no-op make + complete
//     (Engine.MakeKey, the make worker's entry point, called from -workers goroutines), against a
//     bare UPDATE … FOR UPDATE SKIP LOCKED claim-and-complete loop on a jobs table of the same
//     size (-jobs), printing the ratio (target: at least 80 % at every worker count);
//   - e2e: end to end, the path users get: keys scheduled with schedule_jobs, then made by the
//     service's own River workers wired as the service wires them (feeder → populate_make jobs →
//     River fetch → MakeWorker → make → complete), with a no-op make returning one row, at each
//     of -workers as MAKE_WORKERS, against River's bare floor: as many no-op River jobs on the
//     same wiring, pool and client settings. -e2e-rounds rounds, ours and the floor in turns,
//     each on a fresh database; medians of keys/s, their ratio (target: at least 60 % at 16
//     workers) and CPU a key (this process and Postgres's backends). -e2e-keys keys at 16
//     workers, proportionally fewer at fewer;
//   - runs: DataJoint's "more callers go faster": one populate run (reserve_jobs, processes 1)
//     making -runs-keys keys of a table whose make takes -runs-make, alone, then two runs
//     started together over as many fresh keys, through the service's River workers
//     (MAKE_WORKERS -runs-workers, the feeder off); the ratio of their times (target: at most
//     0.6, both runs making keys). The success counts must add up to every key.
//
// Every make and every floor claim is counted per key; a key reserved twice fails the run.
// Usage: populate-bench [-keys 1000000] [-jobs 20000] [-workers 1,4,16]
// [-figures schedule,engine,e2e,runs] [-schedule-only] [-e2e-keys 5000] [-e2e-rounds 3]
// [-runs-keys 400] [-runs-make 50ms] [-runs-workers 4] [-keep] [-cpuprofile FILE];
// DATABASE_URL names the server (default postgres://postgres@127.0.0.1:5432/postgres).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"

	"drover.dev/shared/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "populate-bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	o, err := parse(args, getenv)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		stop, err := startProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if o.has(figSchedule) || o.has(figEngine) {
		if err := engineFigures(ctx, o, out); err != nil {
			return err
		}
	}
	if o.has(figE2E) || o.has(figRuns) {
		return serviceFigures(ctx, o, out)
	}
	return nil
}

// engineFigures measures the engine alone, on a database of its own. It is dropped before the
// service's figures start, so that its million rows' autovacuum is not in their way.
func engineFigures(ctx context.Context, o options, out io.Writer) error {
	b, err := newBench(ctx, o, out)
	if b != nil {
		defer b.close(ctx)
	}
	if err != nil {
		return err
	}
	if o.has(figSchedule) {
		if err := b.schedule(ctx); err != nil {
			return err
		}
		if err := b.feed(ctx); err != nil {
			return err
		}
	}
	if !o.has(figEngine) {
		return nil
	}
	doubles := 0
	for _, w := range o.workers {
		n, err := b.throughput(ctx, w)
		if err != nil {
			return err
		}
		doubles += n
	}
	if doubles > 0 {
		return fmt.Errorf("%d double reservations", doubles)
	}
	fmt.Fprintln(out, "double reservations: 0")
	return nil
}

// serviceFigures measures through the service's own River workers, each measurement on a fresh
// database cloned from a template of its own.
func serviceFigures(ctx context.Context, o options, out io.Writer) error {
	s, err := newScratch(ctx, o.serverURL)
	if s != nil {
		defer s.close(ctx)
	}
	if err != nil {
		return err
	}
	b := &e2e{o: o, out: out, scratch: s}
	if err := config.Defaults(&b.settings); err != nil {
		return err
	}
	if o.has(figE2E) {
		if err := b.endToEnd(ctx); err != nil {
			return err
		}
	}
	if o.has(figRuns) {
		return b.twoRuns(ctx)
	}
	return nil
}

// startProfile writes a CPU profile of the process to path until the returned function is called.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
