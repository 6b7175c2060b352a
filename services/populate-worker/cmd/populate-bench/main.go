// Command populate-bench measures the populate-worker against floors taken in the same run, on a
// database of its own that it creates, migrates and drops:
//
//   - schedule_jobs over -keys keys of key_source (one statement writing the jobs rows, and the
//     table's feed job), printing its target (10 s for a million keys) and the ratio to it, and
//     its floor taken just before: the same rows written by a bare INSERT … SELECT into a copy of
//     the jobs table with its indexes (what this machine and server take to write them); then
//     the feeder enqueueing the makes of -jobs of those keys (keys/s, for comparison with the
//     makes it must keep ahead of);
//   - reserve + no-op make + complete throughput with each of -workers concurrent processes,
//     against a bare UPDATE … FOR UPDATE SKIP LOCKED claim-and-complete loop on a jobs table of
//     the same size (-jobs), printing the ratio (target: at least 80 % at every worker count).
//
// Every make and every floor claim is counted per key; a key reserved twice fails the run.
// Usage: populate-bench [-keys 1000000] [-jobs 20000] [-workers 1,4,16] [-schedule-only];
// DATABASE_URL names the server (default postgres://postgres@127.0.0.1:5432/postgres).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
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
	b, err := newBench(ctx, o, out)
	if err != nil {
		return err
	}
	defer b.close(ctx)
	if err := b.schedule(ctx); err != nil {
		return err
	}
	if err := b.feed(ctx); err != nil {
		return err
	}
	if o.scheduleOnly {
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
