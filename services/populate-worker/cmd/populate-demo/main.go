// Command populate-demo shows the populate-worker at work on its example pipelines: it checks the
// pipelines are registered, inserts upstream signals through POST /v1/examples/seed (the service
// must run with POPULATE_WORKER_EXAMPLES_SEED=true), populates the three computed tables restricted
// to those signals while printing progress, and prints success and error counts. It exits 0 when
// every good signal was made in every table and exactly the empty signals failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"drover.dev/shared/apiclient"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "populate-demo: %v\n", err)
		os.Exit(1)
	}
}

// options are the demo's flags.
type options struct {
	url, token     string
	signals, empty int
	timeout        time.Duration
}

func parse(args []string, getenv func(string) string) (options, error) {
	var o options
	fs := flag.NewFlagSet("populate-demo", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8085", "populate-worker base URL")
	fs.StringVar(&o.token, "token", defaultToken(getenv), "bearer token (default: first of $POPULATE_WORKER_API_TOKENS or $API_TOKENS)")
	fs.IntVar(&o.signals, "signals", 200, "signals to insert upstream")
	fs.IntVar(&o.empty, "empty", 5, "of which empty: their makes fail, as the demo expects")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.url = strings.TrimRight(o.url, "/")
	return o, nil
}

func defaultToken(getenv func(string) string) string {
	for _, name := range []string{"POPULATE_WORKER_API_TOKENS", "API_TOKENS"} {
		if v := getenv(name); v != "" {
			return strings.Split(v, ",")[0]
		}
	}
	return ""
}

// run is the whole demo.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	o, err := parse(args, getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	c := &client{base: o.url, api: apiclient.Client{Token: o.token}}
	if err := c.requireTables(ctx, stdout); err != nil {
		return err
	}
	seed, err := c.seed(ctx, o.signals, o.empty)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "inserted %d signals upstream (%d empty)\n", len(seed.SignalIDs), len(seed.EmptyIDs))
	d := &demo{client: c, seed: seed, out: stdout}
	if err := d.populateAll(ctx); err != nil {
		return err
	}
	return d.report(ctx)
}
