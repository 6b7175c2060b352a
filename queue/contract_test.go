package queue

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// contract is one job-args type as it travels between services.
type contract interface {
	river.JobArgs
	river.JobArgsWithInsertOpts
}

// contracts holds every args type with a fully populated value; its golden file is
// testdata/<kind>.json. Each contract file's test registers its own types in an init function.
var contracts []contract

func register(c ...contract) { contracts = append(contracts, c...) }

// goldenTime is the timestamp golden values use.
var goldenTime = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

func TestContractsMatchGoldenJSON(t *testing.T) {
	t.Parallel()

	for _, args := range contracts {
		t.Run(args.Kind(), func(t *testing.T) {
			t.Parallel()

			got, err := json.MarshalIndent(args, "", "  ")
			require.NoError(t, err)
			path := filepath.Join("testdata", args.Kind()+".json")
			if *update {
				require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "golden file missing: run go test ./... -update")
			require.JSONEq(t, string(want), string(got), "args JSON changed: fields may only be added")
			require.NotEmpty(t, args.InsertOpts().Queue, "every contract pins its queue")
		})
	}
}

// insertOpts is the part of a contract's InsertOpts that other services rely on: the queue its
// consumer works, how often it is tried, and which jobs it is unique among.
type insertOpts struct {
	Queue         string   `json:"queue"`
	MaxAttempts   int      `json:"max_attempts"`
	UniqueByArgs  bool     `json:"unique_by_args,omitempty"`
	UniqueByState []string `json:"unique_by_state,omitempty"`
	// Priority is River's priority, 1 (first) to 4; absent for the default.
	Priority int `json:"priority,omitempty"`
	// UniqueByPeriod is the window of UniqueOpts.ByPeriod, as time.Duration prints it.
	UniqueByPeriod string `json:"unique_by_period,omitempty"`
}

func TestContractsInsertOptsMatchGoldenJSON(t *testing.T) {
	t.Parallel()

	for _, args := range contracts {
		t.Run(args.Kind(), func(t *testing.T) {
			t.Parallel()

			opts := args.InsertOpts()
			view := insertOpts{Queue: opts.Queue, MaxAttempts: opts.MaxAttempts, UniqueByArgs: opts.UniqueOpts.ByArgs, Priority: opts.Priority}
			if p := opts.UniqueOpts.ByPeriod; p != 0 {
				view.UniqueByPeriod = p.String()
			}
			for _, s := range opts.UniqueOpts.ByState {
				view.UniqueByState = append(view.UniqueByState, string(s))
			}
			got, err := json.MarshalIndent(view, "", "  ")
			require.NoError(t, err)
			path := filepath.Join("testdata", "insert_opts", args.Kind()+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "golden file missing: run go test ./... -update")
			require.JSONEq(t, string(want), string(got), "insert options changed: every producer and consumer must agree")
		})
	}
}

func TestContractKindsAreUnique(t *testing.T) {
	t.Parallel()

	seen := map[string]bool{}
	for _, args := range contracts {
		require.False(t, seen[args.Kind()], "kind %q used twice", args.Kind())
		seen[args.Kind()] = true
	}
}
