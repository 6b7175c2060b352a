package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// app is what every command uses once the global flags are resolved.
type app struct {
	ctx    context.Context
	cfg    config
	api    *client
	out    printer
	stderr io.Writer
	// poll is how often a command that follows something reads it again.
	poll time.Duration
	// now is the clock a command that follows something reads its progress by (time.Now): it
	// decides when running counts are printed again.
	now func() time.Time
	// terminal says whether progress goes to a terminal: a progress bar redraws its line there,
	// and elsewhere (a log, a pipe) prints a line per change.
	terminal bool
	// width is how many columns the terminal has (0: unknown), read at each redraw: a redrawn
	// line must be shorter, lest it wrap. nil reads none.
	width func() int
}

const rootExamples = `  drover status                      # every service: health, queues, last sync, batch and weights
  drover batches run                 # run a synthetic batch now and follow it stage by stage
  drover builds submit examples/group.yaml --env REPO="$PWD" --env HOME="$HOME" --follow
  drover populate example_signal_stats --max-calls 100
  drover errors example_signal_stats -o json
  DROVER_SCORER_URL=http://scorer:8083 drover weights`

const rootLong = `drover operates Drover's services over their /v1 APIs: what an operator does every day, from
one command line. It prints tables for people and JSON for scripts (-o json).

Where the services are and the token come from, in this order: the flags, the DROVER_*
environment variables (DROVER_TOKEN, DROVER_ADMIN_TOKEN, DROVER_OUTPUT, DROVER_MINER_SYNC_URL,
DROVER_BATCH_RUNNER_URL, DROVER_SCORER_URL, DROVER_BUILD_SCHEDULER_URL,
DROVER_POPULATE_WORKER_URL, DROVER_CONFIG), a config file (~/.config/drover/config.yaml unless
--config or DROVER_CONFIG names another), and make run's addresses and token:

  token: drover-dev-token
  admin_token: my-admin-token   # tables apply and delete; the token when absent
  output: table
  urls:
    scorer: http://127.0.0.1:8083

` + exitCodes

// newRoot builds the command tree.
func newRoot(ctx context.Context, stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	a := &app{ctx: ctx, stderr: stderr, poll: 500 * time.Millisecond, now: time.Now}
	root := &cobra.Command{
		Use:           "drover",
		Short:         "Operate Drover's services: status, batches, builds, populate runs, miners, weights",
		Long:          rootLong,
		Example:       rootExamples,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	flags := addGlobalFlags(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := flags.resolve(getenv)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		a.cfg = cfg
		a.api = &client{cfg: cfg, http: &http.Client{}}
		a.out = printer{w: cmd.OutOrStdout(), json: cfg.output == "json"}
		a.terminal = isTerminal(a.progress())
		a.width = func() int { return terminalWidth(a.progress()) }
		return nil
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: exitUsage, err: err} })
	root.AddGroup(
		&cobra.Group{ID: "fleet", Title: "The fleet:"},
		&cobra.Group{ID: "batches", Title: "Synthetic batches, miners and weights:"},
		&cobra.Group{ID: "builds", Title: "Build groups:"},
		&cobra.Group{ID: "populate", Title: "Computed tables:"},
	)
	root.AddCommand(a.statusCmd())
	for _, c := range []*cobra.Command{a.batchesCmd(), a.minersCmd(), a.syncCmd(), a.weightsCmd(), a.submissionsCmd()} {
		c.GroupID = "batches"
		root.AddCommand(c)
	}
	b := a.buildsCmd()
	b.GroupID = "builds"
	root.AddCommand(b)
	for _, c := range a.populateCmds() {
		c.GroupID = "populate"
		root.AddCommand(c)
	}
	return root
}

// exactArgs is cobra.ExactArgs with the usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		return nil
	}
}

// isTerminal says whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
