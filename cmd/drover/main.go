// Command drover is the operator's command line for Drover: every service's health and queues on
// one screen, batches, build groups, populate runs, miners and weights, over the services' /v1
// APIs. It reads the services' addresses and the API token from flags, DROVER_* environment
// variables or a small YAML file, prints tables for people and JSON (-o json) for scripts, and
// exits with a code that says what happened (see exitCodes).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the exit code. ctx ends on Ctrl-C: a command that
// follows something running stops following it (populate cancels its run first) and exits
// exitInterrupted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd := newRoot(ctx, stdout, stderr, getenv)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) && ctx.Err() != nil {
		ee = &exitError{code: exitInterrupted, err: err}
	}
	if ee == nil {
		ee = &exitError{code: exitUsage, err: err}
	}
	if !ee.quiet {
		fmt.Fprintln(stderr, "drover:", ee.err)
	}
	return ee.code
}
