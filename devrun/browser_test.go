package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/testdb"
)

// playwrightVersion is the playwright-core the browser test installs under .data/browsertest; it
// drives the machine's own Chromium (Debian's chromium package), so no browser is downloaded.
const playwrightVersion = "1.65.1"

// riverUIExpectations is what an operator must see in each service's River UI after make run's
// demos: its queues and a job with its args, and the demo's failures shown as failed.
var riverUIExpectations = []struct {
	service string
	queues  []string
	jobs    []jobExpectation
}{
	{"miner-sync", []string{"metagraph", "probe"}, []jobExpectation{{"a job with its args", "sync_metagraph", "completed"}}},
	{"batch-runner", []string{"batches", "batch_shards", "probe"}, []jobExpectation{{"a job with its args", "run_batch", "completed"}}},
	{"scorer", []string{"scoring", "probe"}, []jobExpectation{{"a job with its args", "score_batch", "completed"}}},
	{"build-scheduler", []string{"build_scheduler", "build_x86_64-linux", "probe"}, []jobExpectation{
		{"a job with its args", "build_run", "completed"},
		{"failed build shown as failed", "build_run", "discarded"},
	}},
	{"populate-worker", []string{"populate", "populate_feed", "populate_maintenance", "probe"}, []jobExpectation{
		{"a job with its args", "populate_make", "completed"},
		{"errored make shown as failed", "populate_make", "discarded"},
		{"the feeder that enqueued the makes", "populate_feed", "completed"},
	}},
}

type jobExpectation struct{ check, kind, state string }

// browserSpec is what testdata/riverui-browser.mjs reads.
type browserSpec struct {
	Playwright  string         `json:"playwright"`
	Chromium    string         `json:"chromium"`
	UserDataDir string         `json:"userDataDir"`
	User        string         `json:"user"`
	Password    string         `json:"password"`
	Services    []serviceCheck `json:"services"`
	Presses     []press        `json:"presses"`
}

type serviceCheck struct {
	Name   string     `json:"name"`
	URL    string     `json:"url"`
	Queues []string   `json:"queues"`
	Jobs   []jobCheck `json:"jobs"`
}

type jobCheck struct {
	Check string   `json:"check"`
	ID    int64    `json:"id"`
	Texts []string `json:"texts"`
}

// TestRiverUIInABrowser runs make run's fleet and demos, then logs into every service's River UI
// in headless Chromium and checks what an operator sees, every build_run River job of the demo
// group naming in its args the build it ran; then it presses Cancel on a running
// build, Retry on the demo's failed build once its source file exists and Retry on an errored
// make once its upstream row is fixed, and checks each did what it says (docs/river-ui-actions.md). Without Chromium, Node and npm it is
// skipped, except under CI=true, where it fails.
func TestRiverUIInABrowser(t *testing.T) {
	t.Parallel()
	chromium := browserTools(t)
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	playwright := installPlaywright(t, root)
	opts := options{bin: buildCommands(t, root), databaseURL: testdb.New(t), logs: t.TempDir(), token: "browser-test-token", once: true}
	lockFleetPorts(t)
	requireFreePorts(t, opts.bin)

	ctx := context.Background()
	p := newPrinter(testLog{t})
	f, err := startFleet(ctx, opts, p)
	t.Cleanup(func() { f.stop(p) })
	require.NoError(t, err, "start the fleet (logs in %s)", opts.logs)
	require.NoError(t, runDemos(ctx, opts, f, p))

	spec := browserSpec{
		Playwright: playwright, Chromium: chromium, UserDataDir: t.TempDir(),
		User: riverUIUser, Password: opts.token,
	}
	for _, want := range riverUIExpectations {
		url := f.url(want.service)
		check := serviceCheck{Name: want.service, URL: url, Queues: want.queues}
		for _, job := range want.jobs {
			check.Jobs = append(check.Jobs, findJob(t, url, opts.token, job))
		}
		if want.service == "build-scheduler" {
			check.Jobs = append(check.Jobs, demoBuildRows(t, f, opts)...)
		}
		spec.Services = append(spec.Services, check)
	}

	// The buttons, pressed as an operator would once the cause of each failure is fixed; each
	// must do what it says in the service's own terms, not only in River's.
	var outcomes []func()
	for _, prepare := range []func(*testing.T, *fleet, options) (press, func()){buildCancel, buildRetry, makeRetry} {
		p, outcome := prepare(t, f, opts)
		spec.Presses = append(spec.Presses, p)
		outcomes = append(outcomes, outcome)
	}
	runBrowser(t, spec)
	for _, outcome := range outcomes {
		outcome()
	}
}

// browserTools returns Chromium's path once Chromium, Node and npm are all there.
func browserTools(t *testing.T) string {
	t.Helper()
	var missing []string
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if path, err := exec.LookPath(name); err == nil {
				chromium = path
				break
			}
		}
	}
	if chromium == "" {
		missing = append(missing, "chromium")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("River UI browser test needs %s: apt-get install chromium nodejs npm (.ci/run does)", strings.Join(missing, ", "))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; under CI=true it must run")
		}
		t.Skip(msg)
	}
	return chromium
}
