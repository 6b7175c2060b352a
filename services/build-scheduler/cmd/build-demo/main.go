// Command build-demo submits a demo group to a running build-scheduler (a diamond plus a chain
// whose middle job fails), prints progress until the group finishes, prints the jobs' final
// counts by state, and exits 0 when the group ended as expected: failed, with the diamond and
// the chain's first job complete, one job_failed and one dependency_failed.
//
// docs-build fails because its source file (-docs-source) is missing. Create the file and press
// Retry on docs-build's discarded build_run job in River UI (or POST /v1/groups/{id}/retry): the
// job builds, docs-publish runs and the group completes.
//
//	build-demo -url http://localhost:8084 -token drover-dev-token -docs-source /tmp/demo-docs.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"drover.dev/shared/apiclient"
	"drover.dev/shared/tracing"
)

type job struct {
	Name      string            `json:"name"`
	Target    string            `json:"target"`
	Command   []string          `json:"command"`
	DependsOn []string          `json:"depends_on,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

type group struct {
	ID     int64          `json:"id"`
	State  string         `json:"state"`
	Counts map[string]int `json:"counts"`
	Events []struct {
		Message string `json:"message"`
	} `json:"events"`
}

var expected = map[string]int{"complete": 5, "job_failed": 1, "dependency_failed": 1}

func main() {
	url := flag.String("url", "http://localhost:8084", "build-scheduler base URL")
	token := flag.String("token", os.Getenv("API_TOKEN"), "bearer token (default $API_TOKEN)")
	target := flag.String("target", "x86_64-linux", "target the demo jobs run on")
	docs := flag.String("docs-source", filepath.Join(os.TempDir(), "drover-demo-docs.md"), "file docs-build needs; the demo fails it while the file is missing")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	stopTracing, err := tracing.Start(ctx, "build-demo", slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-demo: tracing off:", err)
	}
	c := client{base: strings.TrimRight(*url, "/"),
		api:  apiclient.Client{Token: *token, HTTP: &http.Client{Transport: tracing.Transport(nil)}},
		poll: apiclient.Client{Token: *token}}
	err = tracing.Do(ctx, "build-demo", "build demo", func(ctx context.Context) error { return run(ctx, c, *target, *docs, os.Stdout) })
	flush, cancelFlush := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelFlush()
	_ = stopTracing(flush)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-demo:", err)
		os.Exit(1) //nolint:gocritic // the deferred cancels have nothing left to do
	}
}

// demoJobs is the demo group: docs-build fails while the file docs does not exist.
func demoJobs(target, docs string) []job {
	sh := func(name, script string, deps ...string) job {
		return job{Name: name, Target: target, Command: []string{"sh", "-c", script}, DependsOn: deps}
	}
	return []job{
		sh("fetch", "echo fetching sources; sleep 0.2"),
		sh("compile-lib", "echo compiling lib; sleep 0.3", "fetch"),
		sh("compile-cli", "echo compiling cli; sleep 0.2", "fetch"),
		sh("link", "echo linking; echo demo/app/1.0 > $DROVER_AS_BUILT_FILE", "compile-lib", "compile-cli"),
		sh("docs-prepare", "echo preparing docs"),
		{
			Name: "docs-build", Target: target, DependsOn: []string{"docs-prepare"}, Env: map[string]string{"DOCS_SOURCE": docs},
			Command: []string{"sh", "-c", `test -f "$DOCS_SOURCE" || { echo "docs source $DOCS_SOURCE is missing" >&2; exit 1; }; echo building docs`},
		},
		sh("docs-publish", "echo publishing docs", "docs-build"),
	}
}

func run(ctx context.Context, c client, target, docs string, out io.Writer) error {
	if err := os.Remove(docs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("docs-build must fail first: remove %s: %w", docs, err)
	}
	var g group
	body := map[string]any{"name": "demo", "jobs": demoJobs(target, docs)}
	if err := c.do(ctx, http.MethodPost, "/v1/groups", body, &g); err != nil {
		return err
	}
	fmt.Fprintf(out, "submitted group %d: a diamond (fetch → compile-lib, compile-cli → link) and a chain whose docs-build fails\n", g.ID)
	last := ""
	for g.State == "queued" || g.State == "dispatching" {
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %d still %s: %w", g.ID, g.State, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		g = group{ID: g.ID}
		if err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/groups/%d", g.ID), nil, &g); err != nil {
			return err
		}
		if line := fmt.Sprintf("group %d %s: %s", g.ID, g.State, counts(g.Counts)); line != last {
			fmt.Fprintln(out, line)
			last = line
		}
	}
	for _, e := range g.Events {
		fmt.Fprintln(out, "event:", e.Message)
	}
	fmt.Fprintf(out, "final: group %d %s; jobs by state: %s\n", g.ID, g.State, counts(g.Counts))
	if g.State != "failed" || !maps.Equal(g.Counts, expected) {
		return fmt.Errorf("expected state failed with %s", counts(expected))
	}
	fmt.Fprintln(out, "as expected: the diamond built, docs-build failed, docs-publish was skipped")
	fmt.Fprintf(out, "to finish the group: touch %s, then press Retry on docs-build's failed build_run in River UI (%s/riverui/jobs?state=discarded)\n", docs, c.base)
	fmt.Fprintf(out, "the group as a picture: %s (format=mermaid for Mermaid)\n", graphCommand(c.base, c.api.Token, g.ID))
	return nil
}

// graphCommand is the shell command that draws group id as an SVG, printed for the user to paste.
// It carries the token the demo was given, as no variable of the user's shell holds it, and curl
// fails on an HTTP error (-f) so that an error's problem+json never reaches dot: the error shows
// on the terminal and group.svg stays empty.
func graphCommand(base, token string, id int64) string {
	url := fmt.Sprintf("%s/v1/groups/%d/graph?format=dot", base, id)
	return fmt.Sprintf("curl -fsS -H %s %s | dot -Tsvg > group.svg", shellQuote("Authorization: Bearer "+token), shellQuote(url))
}

// shellQuote quotes s for a POSIX shell, so that a token or URL with any character pastes as
// one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// client calls the scheduler's API at base. Its actions (POST) are spans of the demo's trace,
// when the demo traces; its polling (GET) is not, so the trace shows the builds, not the waiting.
type client struct {
	base      string
	api, poll apiclient.Client
}

func (c client) do(ctx context.Context, method, path string, body, out any) error {
	api := c.api
	if method == http.MethodGet {
		api = c.poll
	}
	_, err := api.Do(ctx, method, c.base+path, body, out)
	return err
}
