// Command devrun is what make run runs: it migrates the database, starts every Drover service as
// its own process on fixed local ports, waits until each is ready, runs the demonstrations (a probe
// between every pair of services, then each workload's demo when its program is built), prints
// what happened and where each service's River UI is, and keeps serving until Ctrl-C (or exits
// after the demos with -once).
//
// It talks to the services only over HTTP, as a user would. Before starting anything it checks
// that its fixed ports are free, naming the process that holds one that is not, and every process
// it starts dies with it (shared/procattr), so an interrupted run leaves none on those ports.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// options are devrun's flags.
type options struct {
	bin         string // folder holding the built binaries
	databaseURL string
	logs        string // folder for the services' log files
	token       string
	once        bool
	jaeger      string            // Jaeger's binary, built or being built; empty runs none
	otel        map[string]string // OTEL_* settings of every process started (startTracing)
}

// defaultToken is the API token make run's services accept, and drover's default.
const defaultToken = "drover-dev-token"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "devrun:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var opts options
	fs := flag.NewFlagSet("devrun", flag.ContinueOnError)
	fs.StringVar(&opts.bin, "bin", ".data/bin", "folder with the built service binaries")
	fs.StringVar(&opts.databaseURL, "database-url", os.Getenv("DATABASE_URL"), "database the services use")
	fs.StringVar(&opts.logs, "logs", ".data/logs", "folder for service logs")
	fs.StringVar(&opts.token, "token", defaultToken, "API token the services accept")
	fs.BoolVar(&opts.once, "once", false, "exit after the demos: 0 when all succeeded")
	fs.StringVar(&opts.jaeger, "jaeger", "", "Jaeger all-in-one binary to send the traces to, started when it exists; while it is being built (scripts/jaeger.sh background) the fleet starts without waiting for it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if opts.databaseURL == "" {
		return errors.New("no database: pass -database-url or set DATABASE_URL (make run does)")
	}
	if err := os.MkdirAll(opts.logs, 0o755); err != nil {
		return err
	}
	if err := checkPorts(ctx, opts); err != nil {
		return err
	}
	p := newPrinter(stdout)
	p.step("migrating %s", redact(opts.databaseURL))
	if err := runCommand(ctx, filepath.Join(opts.bin, "migrate"), []string{"up"}, env(opts, rolePasswords(opts.databaseURL)), filepath.Join(opts.logs, "migrate.log")); err != nil {
		return fmt.Errorf("migrate: %w (log: %s)", err, filepath.Join(opts.logs, "migrate.log"))
	}
	traces := startTracing(ctx, opts, p)
	defer traces.stop()
	opts.otel = traces.env
	fleet, err := startFleet(ctx, opts, p)
	defer fleet.stop(p)
	if err != nil {
		return err
	}
	demoErr := runDemos(ctx, opts, fleet, p)
	if ctx.Err() == nil {
		demoErr = errors.Join(demoErr, showRiverUI(ctx, opts, fleet, p))
	}
	if ctx.Err() == nil && traces.answering() {
		traces.showTraces(ctx, p)
	} else if ctx.Err() == nil && traces.env != nil && !opts.once {
		go traces.traceLate(ctx, opts, fleet, p)
	}
	if opts.once || ctx.Err() != nil {
		return demoErr
	}
	showDrover(opts, p)
	p.step("serving until Ctrl-C; logs in %s", opts.logs)
	<-ctx.Done()
	return nil
}

// showDrover prints two commands of the operator CLI to try on the running fleet.
func showDrover(opts options, p *printer) {
	drover := filepath.Join(opts.bin, "drover")
	if _, err := os.Stat(drover); err != nil {
		return // not built
	}
	if opts.token != defaultToken {
		drover = "DROVER_TOKEN=" + opts.token + " " + drover
	}
	p.step("try the operator CLI (%s --help lists every command):", filepath.Join(opts.bin, "drover"))
	p.info("%s status          # every service's health and queues, the last sync, batch and weights", drover)
	p.info("%s batches run     # run a batch and follow it stage by stage", drover)
}
