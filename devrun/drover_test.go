package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/shared/apiclient"
	"drover.dev/shared/testdb"
)

// droverBundle runs the drover binary against one make run fleet.
type droverBundle struct {
	bin    string // the drover binary
	config string // its config file: the fleet's token
	fleet  *fleet
	opts   options
}

// droverResult is one drover invocation: its exit code and what it printed.
type droverResult struct {
	code           int
	stdout, stderr string
}

// drover runs drover with args and returns its exit code and output.
func (b *droverBundle) drover(t *testing.T, args ...string) droverResult {
	t.Helper()
	cmd := b.command(t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := droverResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		res.code = ee.ExitCode()
	} else {
		require.NoError(t, err, "run drover %v", args)
	}
	t.Logf("drover %s: exit %d\n%s%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	return res
}

func (b *droverBundle) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), b.bin, args...)
	// Only the config file says where the fleet is and its token: nothing from the environment.
	cmd.Env = []string{"DROVER_CONFIG=" + b.config, "PATH=" + os.Getenv("PATH")}
	return cmd
}

// ok runs drover, requires exit 0 and returns its stdout.
func (b *droverBundle) ok(t *testing.T, args ...string) string {
	t.Helper()
	res := b.drover(t, args...)
	require.Equal(t, 0, res.code, "drover %v: %s", args, res.stderr)
	return res.stdout
}

// json runs drover -o json, requires exit 0 and decodes its stdout into out.
func (b *droverBundle) json(t *testing.T, out any, args ...string) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(b.ok(t, append(args, "-o", "json")...)), out))
}

// page is a list as -o json prints it.
type page struct {
	Items []map[string]any `json:"items"`
}

// TestDroverAgainstTheFleet starts make run's fleet on a fresh database and runs its demos, then
// drives every drover command group against it, as an operator would: what each prints, in
// tables and as JSON, and the exit code that says what happened.
//
//nolint:tparallel,paralleltest // the subtests share the fleet, whose ports this test holds: they run in turn
func TestDroverAgainstTheFleet(t *testing.T) {
	t.Parallel()
	f, opts, demos := startDemoFleet(t, "drover-cli-test-token")

	config := filepath.Join(t.TempDir(), "drover.yaml")
	require.NoError(t, os.WriteFile(config, []byte("token: "+opts.token+"\n"), 0o600))
	b := &droverBundle{bin: filepath.Join(opts.bin, "drover"), config: config, fleet: f, opts: opts}

	t.Run("PopulateDemoRunMakesItsKeys", func(t *testing.T) {
		// make run's populate demo: its run of example_signal_stats makes the keys it took itself,
		// the five empty signals failing (made 195, 5 failed), whatever the background feeder does.
		m := demoRunSummary.FindStringSubmatch(demos.String())
		require.NotNil(t, m, "the populate demo says how its run ended:\n%s", demos)
		made, _ := strconv.Atoi(m[1])
		failed, _ := strconv.Atoi(m[2])
		require.GreaterOrEqual(t, made, 150, "the run made the keys itself: %s", m[0])
		require.LessOrEqual(t, failed, 5, m[0])
	})
	t.Run("Help", func(t *testing.T) {
		help := b.ok(t, "--help")
		for _, cmd := range []string{"status", "batches", "builds", "tables", "populate", "runs", "errors",
			"schedule", "reschedule", "ignore", "miners", "sync", "weights", "submissions", "completion", "Exit codes:"} {
			require.Contains(t, help, cmd)
		}
		require.Contains(t, b.ok(t, "completion", "bash"), "bash completion")
		require.Equal(t, exitUsageCode, b.drover(t, "no-such-command").code)
		require.Equal(t, exitUsageCode, b.drover(t, "batches", "show").code, "a missing argument")
	})
	t.Run("Status", func(t *testing.T) {
		out := b.ok(t, "status")
		for _, s := range services() {
			require.Regexp(t, s.name+` +ready`, out)
		}
		require.Contains(t, out, "last sync:")
		require.Regexp(t, `last batch: +#\d+ `, out)
		var st struct {
			Services []struct {
				Name   string `json:"name"`
				Ready  bool   `json:"ready"`
				Queues []struct {
					Queue string `json:"queue"`
				} `json:"queues"`
			} `json:"services"`
		}
		b.json(t, &st, "status")
		require.Len(t, st.Services, 5)
		for _, s := range st.Services {
			require.True(t, s.Ready, s.Name)
			require.NotEmpty(t, s.Queues, "%s's River queues", s.Name)
		}
		res := b.drover(t, "status", "--scorer-url", "http://127.0.0.1:1")
		require.Equal(t, 5, res.code, "a service that does not answer")
		require.Regexp(t, `scorer +DOWN`, res.stdout)
	})
	t.Run("Auth", func(t *testing.T) {
		res := b.drover(t, "batches", "list", "--token", "wrong")
		require.Equal(t, 6, res.code)
		require.Contains(t, res.stderr, "401")
	})
	t.Run("Traces", func(t *testing.T) { testDemoTraces(t, opts) })
	t.Run("Batches", func(t *testing.T) { testDroverBatches(t, b) })
	t.Run("Builds", func(t *testing.T) { testDroverBuilds(t, b) })
	t.Run("Populate", func(t *testing.T) { testDroverPopulate(t, b) })
	t.Run("PopulateRunMakesItsKeys", func(t *testing.T) { testPopulateRunMakesItsKeys(t, b) })
	t.Run("MinersAndWeights", func(t *testing.T) {
		var miners page
		b.json(t, &miners, "miners")
		require.NotEmpty(t, miners.Items)
		require.Contains(t, b.ok(t, "miners"), "HOTKEY")
		require.Contains(t, b.ok(t, "sync"), "sync job:")
		require.Regexp(t, `ok +\d+`, b.ok(t, "sync", "--events"))
		require.Regexp(t, `batch \d+ \(started`, b.ok(t, "weights"))
		require.Contains(t, b.ok(t, "weights", "--batch", "1"), "DANCING")
		var subs page
		b.json(t, &subs, "submissions")
		require.NotEmpty(t, subs.Items, "the demo batch's weights were sent through the Pylon stub")
		require.Equal(t, 3, b.drover(t, "weights", "--batch", "999").code, "no such batch")
	})
	// Last: it kills processes of the fleet, which devrun restarts.
	t.Run("KilledReplicas", func(t *testing.T) { testKilledReplicas(t, b) })
}

// startDemoFleet builds every command, starts make run's fleet on a fresh database with token,
// and runs the demos; the fleet stops when the test ends.
func startDemoFleet(t *testing.T, token string) (*fleet, options, *syncBuffer) {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin := buildCommands(t, root)
	lockFleetPorts(t)
	requireFreePorts(t, bin)
	opts := options{bin: bin, databaseURL: testdb.New(t), logs: t.TempDir(), token: token, once: true, jaeger: jaegerBinary(t, root)}
	ctx := context.Background()
	demos := &syncBuffer{}
	p := newPrinter(io.MultiWriter(testLog{t}, demos))
	traces := startTracing(ctx, opts, p)
	t.Cleanup(traces.stop) // after the fleet's stop: the services flush their last spans to it
	opts.otel = traces.env
	f, err := startFleet(ctx, opts, p)
	t.Cleanup(func() { f.stop(p) })
	require.NoError(t, err, "start the fleet (logs in %s)", opts.logs)
	require.NoError(t, runDemos(ctx, opts, f, p), "the demos (logs in %s)", opts.logs)
	return f, opts, demos
}

// exitUsageCode is drover's exit code for bad arguments.
const exitUsageCode = 2

// testDroverBatches follows a batch run to its end, then cancels a running one.
func testDroverBatches(t *testing.T, b *droverBundle) {
	t.Helper()
	require.Regexp(t, `(?m)^1 +done +50`, b.ok(t, "batches", "list"))
	show := b.ok(t, "batches", "show", "1")
	for _, stage := range []string{"manifests", "generate", "availability", "hot", "receipts"} {
		require.Contains(t, show, stage)
	}
	require.Equal(t, 3, b.drover(t, "batches", "show", "999").code)
	require.Equal(t, 4, b.drover(t, "batches", "cancel", "1").code, "a done batch cannot be cancelled")

	run := b.ok(t, "batches", "run")
	require.Regexp(t, `batch \d+ running: 50 miners to test`, run)
	// Every stage, to the hot phase's end and the receipts, which end after the last poll of the
	// live record, as make run's batch demo prints them.
	require.Regexp(t, `(?m)^  manifests +\d+/50 miners.* in `, run)
	require.Regexp(t, `(?m)^  hot phase +sent \d+ `, run)
	require.Regexp(t, `(?m)^  hot phase +\d+ finished, \d+ failed, \d+ no answer in `, run)
	require.Regexp(t, `(?m)^  receipts +done in `, run)
	require.Regexp(t, `batch \d+ done: jobs completed=\d+`, run)

	// --no-follow names the batch, so it can be cancelled without batches list; the batch's error
	// names the cancel's request, not River UI.
	var started struct {
		JobID   int64  `json:"job_id"`
		BatchID *int64 `json:"batch_id"`
	}
	b.json(t, &started, "batches", "run", "--no-follow")
	require.NotNil(t, started.BatchID, "batches run --no-follow names the batch")
	id := strconv.FormatInt(*started.BatchID, 10)
	var cancelled struct {
		RiverJobIDs []int64 `json:"river_job_ids"`
		RequestID   string  `json:"request_id"`
	}
	b.json(t, &cancelled, "batches", "cancel", id)
	require.Contains(t, cancelled.RiverJobIDs, started.JobID)
	var batch struct {
		State string  `json:"state"`
		Error *string `json:"error"`
	}
	require.Eventually(t, func() bool {
		b.json(t, &batch, "batches", "show", id)
		return batch.State == "failed"
	}, 20*time.Second, 100*time.Millisecond, "the cancelled batch %s never failed", id)
	require.NotNil(t, batch.Error)
	require.Contains(t, *batch.Error, "cancelled through the API (request "+cancelled.RequestID+") while running")
}

// format prints a JSON number as drover's tables do.
func format(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatInt(int64(f), 10)
	}
	return fmt.Sprint(v)
}

// testDroverBuilds submits a YAML group and follows it, reads its log and graph, and follows the
// demo's failed group.
func testDroverBuilds(t *testing.T, b *droverBundle) {
	t.Helper()
	dir := t.TempDir()
	group := filepath.Join(dir, "group.yaml")
	require.NoError(t, os.WriteFile(group, []byte(`name: drover-test
jobs:
  - {name: hello, target: x86_64-linux, command: [sh, -c, "echo hello from drover"]}
  - {name: after, target: x86_64-linux, command: [sh, -c, "echo after"], depends_on: [hello]}
`), 0o600))
	out := b.ok(t, "builds", "submit", group, "--follow")
	require.Regexp(t, `group \d+ complete: complete=2`, out)
	var groups page
	b.json(t, &groups, "builds", "list", "--limit", "1")
	require.Len(t, groups.Items, 1)
	id := format(groups.Items[0]["id"])
	var shown struct {
		Jobs page `json:"jobs"`
	}
	b.json(t, &shown, "builds", "show", id)
	require.Len(t, shown.Jobs.Items, 2)
	require.Contains(t, b.ok(t, "builds", "log", format(shown.Jobs.Items[0]["id"]), "-f"), "hello from drover")
	require.Contains(t, b.ok(t, "builds", "graph", id, "--format", "mermaid"), "flowchart")
	require.Contains(t, b.ok(t, "builds", "graph", id), "digraph")
	require.Equal(t, exitUsageCode, b.drover(t, "builds", "graph", id, "--format", "png").code)

	// The demo's first group failed (a missing file); following it says so.
	res := b.drover(t, "builds", "follow", "1")
	require.Equal(t, 7, res.code)
	require.Contains(t, res.stdout, "group 1 failed")
	require.Equal(t, 4, b.drover(t, "builds", "cancel", id).code, "a complete group cannot be cancelled")
	require.Contains(t, b.ok(t, "builds", "retry", "1"), "state:")

	bad := filepath.Join(dir, "cycle.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"name": "cycle", "jobs": [
		{"name": "a", "target": "x86_64-linux", "command": ["true"], "depends_on": ["b"]},
		{"name": "b", "target": "x86_64-linux", "command": ["true"], "depends_on": ["a"]}]}`), 0o600))
	res = b.drover(t, "builds", "submit", bad)
	require.Equal(t, 4, res.code, "a cycle is refused")
	require.Contains(t, res.stderr, "cycle")
}

// testDroverPopulate reads the demo's tables, runs and errors, acts on error keys, runs a
// populate to its end, and interrupts another with Ctrl-C.
func testDroverPopulate(t *testing.T, b *droverBundle) {
	t.Helper()
	require.Contains(t, b.ok(t, "tables"), "example_signal_stats")
	var runs page
	b.json(t, &runs, "runs", "list", "--table", "example_signal_stats")
	require.Len(t, runs.Items, 1, "the demo's run")
	require.Equal(t, "done", runs.Items[0]["state"])
	// The run counts only the makes done for it (DataJoint's counting): keys the feeder made
	// first are made_elsewhere, so every key it took is accounted for once.
	var run struct {
		Total         int64 `json:"total"`
		SuccessCount  int64 `json:"success_count"`
		Errors        int64 `json:"errors"`
		MadeElsewhere int64 `json:"made_elsewhere"`
		Skipped       int64 `json:"skipped"`
		Dropped       int64 `json:"dropped"`
	}
	b.json(t, &run, "runs", "show", format(runs.Items[0]["id"]))
	require.Positive(t, run.Total)
	require.Equal(t, run.Total, run.SuccessCount+run.Errors+run.MadeElsewhere+run.Skipped+run.Dropped, "%+v", run)
	require.Contains(t, b.ok(t, "runs", "show", format(runs.Items[0]["id"])), "done")

	require.Contains(t, b.ok(t, "errors", "example_signal_stats"), "has no samples")
	var errs page
	b.json(t, &errs, "errors", "example_signal_stats")
	require.Len(t, errs.Items, 5, "the demo's five bad signals")
	first, second := errs.Items[0]["key_hash"].(string), errs.Items[1]["key_hash"].(string)
	require.Regexp(t, `status: +scheduled`, b.ok(t, "reschedule", "example_signal_stats", first))
	require.Regexp(t, `status: +ignore`, b.ok(t, "ignore", "example_signal_stats", second))
	require.Equal(t, 3, b.drover(t, "reschedule", "example_signal_stats", strings.Repeat("0", 32)).code)
	require.Contains(t, b.ok(t, "schedule", "example_signal_stats"), "scheduled:")

	// Every grade key is made: a run that takes none ends done at once.
	require.Contains(t, b.ok(t, "populate", "example_signal_grade"), " done")

	seedSignals(t, b, 2000)
	cmd := b.command(t, "populate", "example_signal_stats")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "running") },
		20*time.Second, 20*time.Millisecond, "no progress line: %s", &out)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	ee, ok := errors.AsType[*exec.ExitError](err)
	require.True(t, ok, "drover populate exits non-zero on Ctrl-C: %v\n%s", err, &out)
	require.Equal(t, 130, ee.ExitCode(), "%s", &out)
	require.Contains(t, out.String(), "cancelling populate run")
	require.Contains(t, out.String(), "interrupted")
	b.json(t, &runs, "runs", "list", "--table", "example_signal_stats", "--limit", "1")
	require.Equal(t, "interrupted", runs.Items[0]["state"])
}

// The upstream rows testPopulateRunMakesItsKeys inserts: signal ids far above those the seed
// route's identity column hands out (a few thousand in this test), which no other subtest uses.
const firstRunSignal, runSignals = 700_001, 1000

var (
	// runProgress is a progress line drover populate prints while its run runs, with the rate and
	// the ETA ("?" until known).
	runProgress = regexp.MustCompile(`(?m)^run (\d+) running \[[#x-]+\] +\d+% of \d+ keys: made \d+, \d+ failed, \d+ made elsewhere.*, \d+ remaining; \d+\.\d keys/s, eta (\S+)$`)
	// demoRunSummary is the line make run's populate demo ends its example_signal_stats run with.
	demoRunSummary = regexp.MustCompile(`populate \| populate run \d+ of example_signal_stats: done; made (\d+), (\d+) failed, (\d+) made elsewhere`)
	// runSummary is the line drover populate ends with: how the run ended.
	runSummary = regexp.MustCompile(`(?m)^populate run (\d+) of example_signal_stats: (\w+); made (\d+), (\d+) failed, (\d+) made elsewhere`)
)

// testPopulateRunMakesItsKeys inserts 1,000 new upstream rows of example_signal while the
// background feeder is on, as make run's fleet has it, and at once populates example_signal_stats
// with drover: the run takes the new keys and makes them itself (background makes yield to a
// run); every key it took is accounted for once; and drover shows it working, a progress line a
// second with the rate and the ETA, and ends saying what the run made.
func testPopulateRunMakesItsKeys(t *testing.T, b *droverBundle) {
	t.Helper()
	api := apiclient.Client{Token: b.opts.token}
	base := b.fleet.url("populate-worker")
	// What the earlier subtests left scheduled (the interrupted run's dropped keys) is made by the
	// background first, so that the run takes the new keys alone.
	var progress struct {
		Total     int            `json:"total"`
		Remaining int            `json:"remaining"`
		Jobs      map[string]int `json:"jobs"`
	}
	require.Eventually(t, func() bool {
		_, err := api.Do(t.Context(), http.MethodGet, base+"/v1/tables/example_signal_stats/progress", nil, &progress)
		require.NoError(t, err)
		return progress.Jobs["scheduled"]+progress.Jobs["reserved"] == 0
	}, 3*time.Minute, 200*time.Millisecond, "example_signal_stats never settled: %+v", &progress)

	conn, err := pgx.Connect(t.Context(), b.opts.databaseURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	// One statement: one change notification, every row there at once, as a data team's load is.
	_, err = conn.Exec(t.Context(), `INSERT INTO populate_worker.example_signal (signal_id, samples)
		SELECT g, ARRAY[g % 7, g % 11, g % 13, 0.5]::double precision[] FROM generate_series($1::bigint, $2::bigint) AS g`,
		firstRunSignal, firstRunSignal+runSignals-1)
	require.NoError(t, err)

	// At once, while the feeder hears of the new keys too. The run schedules them itself whenever
	// the table was last scheduled (the interval 0), so it takes them whichever comes first.
	res := b.drover(t, "populate", "example_signal_stats", "--min-scheduling-interval", "0")
	out := res.stdout + res.stderr

	m := runSummary.FindStringSubmatch(out)
	require.NotNil(t, m, "drover populate ends with the run's summary:\n%s", out)
	var run struct {
		State         string `json:"state"`
		Total         int64  `json:"total"`
		SuccessCount  int64  `json:"success_count"`
		Errors        int64  `json:"errors"`
		MadeElsewhere int64  `json:"made_elsewhere"`
		Skipped       int64  `json:"skipped"`
		Dropped       int64  `json:"dropped"`
	}
	_, err = api.Do(t.Context(), http.MethodGet, base+"/v1/populate-runs/"+m[1], nil, &run)
	require.NoError(t, err)
	t.Logf("populate run %s: %+v", m[1], run)

	require.Equal(t, "done", run.State)
	require.Equal(t, []string{run.State, strconv.FormatInt(run.SuccessCount, 10), strconv.FormatInt(run.Errors, 10),
		strconv.FormatInt(run.MadeElsewhere, 10)}, m[2:6], "the summary says what the run did")
	if run.Errors == 0 {
		require.Equal(t, 0, res.code, "a run without errors exits 0")
	}
	require.Equal(t, run.Total, run.SuccessCount+run.Errors+run.MadeElsewhere+run.Skipped+run.Dropped,
		"every key the run took is accounted for once")
	// Every new key is made. The run took those the background had not made before the run
	// began: the feeder hears of the rows too (LISTEN_FLUSH_EVERY after the insert), so on a busy
	// machine it may make some first; the run must still take the most of them.
	var made int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM populate_worker.example_signal_stats
		WHERE signal_id BETWEEN $1 AND $2`, firstRunSignal, firstRunSignal+runSignals-1).Scan(&made))
	require.Equal(t, int64(runSignals), made, "every new key is made")
	require.GreaterOrEqual(t, run.Total, int64(runSignals/2), "the run took the most of the new keys")

	// While it ran: a line a second, each with the rate and the ETA, known once keys have ended.
	lines := map[string]bool{}
	withETA := 0
	for _, p := range runProgress.FindAllStringSubmatch(out, -1) {
		if p[1] != m[1] || lines[p[0]] {
			continue
		}
		lines[p[0]] = true
		if p[2] != "?" {
			withETA++
		}
	}
	require.GreaterOrEqual(t, len(lines), 2, "distinct progress lines while the run ran:\n%s", out)
	require.GreaterOrEqual(t, withETA, 2, "progress lines with a rate and a known ETA:\n%s", out)

	// Last, as it says the most: the run made its keys itself, the background's makes yielding.
	require.GreaterOrEqual(t, run.SuccessCount*10, run.Total*9,
		"the run made at least 90 %% of the keys it took itself (made %d of %d; %d made elsewhere)", run.SuccessCount, run.Total, run.MadeElsewhere)
}

// seedSignals adds n example signals through the demo's seed route, and waits until most of
// example_signal_stats' new keys are scheduled (the upstream listener schedules them), so that
// a populate run takes them.
func seedSignals(t *testing.T, b *droverBundle, n int) {
	t.Helper()
	api := apiclient.Client{Token: b.opts.token}
	base := b.fleet.url("populate-worker")
	_, err := api.Do(t.Context(), http.MethodPost, base+"/v1/examples/seed", map[string]int{"signals": n}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var progress struct {
			Jobs map[string]int `json:"jobs"`
		}
		_, err := api.Do(t.Context(), http.MethodGet, base+"/v1/tables/example_signal_stats/progress", nil, &progress)
		require.NoError(t, err)
		return progress.Jobs["scheduled"] >= n/2
	}, 10*time.Second, 50*time.Millisecond)
}

// syncBuffer is a bytes.Buffer a running command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
