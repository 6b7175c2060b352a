package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/buildworker"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/fakes3"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/services/build-scheduler/internal/work"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConfig is the scheduler's default configuration with intervals short enough for tests.
func testConfig(t *testing.T, dbURL string) Config {
	t.Helper()
	var cfg Config
	require.NoError(t, config.Defaults(&cfg))
	cfg.Common = servicetest.Config(dbURL)
	cfg.MaxJobsPerGroup, cfg.MaxDepsPerJob, cfg.MaxJobBytes = 100, 10, 4096
	cfg.DefaultJobTimeout, cfg.MaxJobTimeout = time.Minute, time.Hour
	cfg.ReapInterval = 100 * time.Millisecond
	cfg.WatchdogInterval, cfg.StallAfter = time.Hour, time.Hour
	return cfg
}

func startScheduler(t *testing.T, cfg Config) string {
	t.Helper()
	return servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
}

// workerConfig is the build-worker's default configuration, with no watchdog.
func workerConfig(t *testing.T, dbURL string, targets ...string) buildworker.Config {
	t.Helper()
	var cfg buildworker.Config
	require.NoError(t, config.Defaults(&cfg))
	cfg.Common = servicetest.Config(dbURL)
	cfg.Targets, cfg.WatchdogInterval = targets, time.Hour
	return cfg
}

func startWorker(t *testing.T, dbURL string, targets ...string) string {
	t.Helper()
	return startWorkerWith(t, workerConfig(t, dbURL, targets...))
}

// runWorker runs a build-worker with the kinds its command registers.
func runWorker(ctx context.Context, cfg buildworker.Config, ln net.Listener, stdout io.Writer) error {
	return buildworker.Run(ctx, cfg, work.Settings{WatchdogInterval: cfg.WatchdogInterval}.Register, ln, stdout)
}

func startWorkerWith(t *testing.T, cfg buildworker.Config) string {
	t.Helper()
	return servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runWorker(ctx, cfg, ln, stdout)
	})
}

func TestConfigLoadsThroughEnvconfig(t *testing.T) {
	t.Setenv("BUILD_SCHEDULER_DATABASE_URL", "postgres://db/x")
	var cfg Config
	require.NoError(t, config.Load(queue.BuildScheduler.EnvPrefix(), &cfg, nil, io.Discard))
	require.Equal(t, 24*time.Hour, cfg.MaxJobTimeout)
	require.Equal(t, time.Minute, cfg.Slack)
	require.Equal(t, "postgres", cfg.LogStore)
	require.Empty(t, cfg.Check())
	// The limits tests and tools validate with are the scheduler's defaults.
	require.Equal(t, dag.DefaultLimits, cfg.submit().Limits)

	t.Setenv("BUILD_WORKER_DATABASE_URL", "postgres://db/x")
	t.Setenv("BUILD_WORKER_TARGETS", "x86_64-linux,arm")
	var wcfg buildworker.Config
	require.NoError(t, config.Load("BUILD_WORKER", &wcfg, nil, io.Discard))
	require.Equal(t, []string{"x86_64-linux", "arm"}, wcfg.Targets)
	require.Equal(t, 2, wcfg.Slots)
	require.Equal(t, cfg.MaxJobTimeout, wcfg.MaxJobTimeout)
	require.Equal(t, cfg.Slack, wcfg.Slack)
	require.Equal(t, "off", wcfg.SynchronousCommit)
	require.Empty(t, wcfg.Check())
}

// logStores are the log stores the log tests run with; each gives the configuration the
// scheduler and its workers share.
var logStores = map[string]func(t *testing.T) logstore.Config{
	"Postgres": func(t *testing.T) logstore.Config { return testConfig(t, "").Config },
	"S3":       func(t *testing.T) logstore.Config { return s3LogStore(fakes3.Start(t)) },
}

func s3LogStore(srv fakes3.Server) logstore.Config {
	return logstore.Config{
		LogStore: "s3", LogS3Endpoint: srv.URL, LogS3Region: srv.Region, LogS3Bucket: srv.Bucket,
		LogS3AccessKey: srv.AccessKey, LogS3SecretKey: srv.SecretKey, LogS3PathStyle: true,
	}
}

func sh(name, script string, deps ...string) dag.JobSpec {
	return dag.JobSpec{Name: name, Target: "x86_64-linux", Command: []string{"sh", "-c", script}, DependsOn: deps}
}

// waitGroup polls the group until it is final and returns it.
func waitGroup(t *testing.T, base string, id int64) jobgraph.Group {
	t.Helper()
	var g jobgraph.Group
	require.Eventually(t, func() bool {
		g = jobgraph.Group{}
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d", base, id), nil, &g))
		return g.FinishedAt != nil
	}, 20*time.Second, 50*time.Millisecond)
	return g
}

func TestRunServesHealthAndProbes(t *testing.T) {
	t.Parallel()
	base := startScheduler(t, testConfig(t, testdb.New(t)))
	servicetest.RequireRiverUIQueues(t, base, queue.QueueProbe, queue.QueueBuildScheduler)

	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/healthz", nil, nil))
	var probe struct{ ID int64 }
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/probes", map[string]string{"target": "build-scheduler"}, &probe))
	require.Positive(t, probe.ID)
}

func TestBadTextIsRejected(t *testing.T) {
	t.Parallel()
	servicetest.RequireBadInputRejected(t, startScheduler(t, testConfig(t, testdb.New(t))))
}

func TestGroupRunsToCompletionOnAWorker(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := startScheduler(t, testConfig(t, dbURL))
	startWorker(t, dbURL, "x86_64-linux")

	sub := dag.Submission{Name: "demo", Jobs: []dag.JobSpec{
		sh("top", "echo top; echo core/top/1.0 > $DROVER_AS_BUILT_FILE"),
		sh("left", "echo left", "top"), sh("right", "echo right >&2", "top"),
		sh("bottom", "echo bottom", "left", "right"),
		sh("c1", "echo c1"), sh("c2", "false", "c1"), sh("c3", "echo never", "c2"),
	}}
	var created jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", sub, &created))
	g := waitGroup(t, base, created.ID)
	require.Equal(t, jobgraph.GroupFailed, g.State)
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.Complete: 5, jobgraph.JobFailed: 1, jobgraph.DependencyFailed: 1}, g.Counts)

	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs?state=complete&limit=1", base, g.ID), nil, &jobs))
	require.Len(t, jobs.Items, 1)
	require.Equal(t, "top", jobs.Items[0].Name)
	require.Equal(t, "core/top/1.0", *jobs.Items[0].AsBuilt)

	status, body := getText(t, fmt.Sprintf("%s/v1/jobs/%d/log", base, jobs.Items[0].ID))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "=== attempt 1 ===\ntop\n", body)
}

func TestFailedBuildIsAFailedRiverJob(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := startScheduler(t, testConfig(t, dbURL))
	worker := startWorker(t, dbURL, "x86_64-linux")

	sub := dag.Submission{Name: "truth", Jobs: []dag.JobSpec{sh("ok", "true"), sh("broken", "echo oops >&2; exit 3")}}
	var created jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", sub, &created))
	require.Equal(t, jobgraph.GroupFailed, waitGroup(t, base, created.ID).State)

	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, created.ID), nil, &jobs))
	states := map[string]jobgraph.JobState{}
	for _, j := range jobs.Items {
		states[j.Name] = j.State
	}
	require.Equal(t, map[string]jobgraph.JobState{"ok": jobgraph.Complete, "broken": jobgraph.JobFailed}, states)

	// River shows each build's River job as the build ended, its args naming the build. River
	// completes a succeeded build's River job once its worker's report has committed.
	pool := testdb.NewPoolFor(t, dbURL)
	river := map[string][2]string{}
	require.Eventually(t, func() bool {
		rows, err := pool.Query(context.Background(), `
			SELECT args->>'job_name', state::text, coalesce(errors[1]->>'error', '')
			FROM build_scheduler.river_job WHERE kind = 'build_run' ORDER BY id`)
		require.NoError(t, err)
		clear(river)
		for rows.Next() {
			var name, state, msg string
			require.NoError(t, rows.Scan(&name, &state, &msg))
			river[name] = [2]string{state, msg}
		}
		require.NoError(t, rows.Err())
		return river["ok"][0] != "running"
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, river, 2, "one River job per build, named by its args")
	require.Equal(t, [2]string{"completed", ""}, river["ok"])
	require.Equal(t, "discarded", river["broken"][0])
	require.Contains(t, river["broken"][1], "build broken")
	require.Contains(t, river["broken"][1], "exit 3")
	requireBuildMetrics(t, base, worker)
}

// requireBuildMetrics checks what the scheduler's and the worker's /metrics say after
// TestFailedBuildIsAFailedRiverJob's group, and that they expose every family the dashboards
// and alert rules name.
func requireBuildMetrics(t *testing.T, base, worker string) {
	t.Helper()
	servicetest.RequireMetrics(t, base, servicetest.NamedMetrics(t, "drover_build_scheduler_")...)
	servicetest.RequireMetrics(t, worker, servicetest.NamedMetrics(t, "drover_build_worker_")...)
	s := servicetest.Metrics(t, base)
	// The worker applied its own reports, so it counted the failed job and the group it settled.
	w := servicetest.Metrics(t, worker)
	require.Equal(t, 1.0, servicetest.Value(t, w, "drover_build_scheduler_jobs_finished_total", map[string]string{"state": string(jobgraph.JobFailed)}))
	require.Equal(t, 1.0, servicetest.Value(t, w, "drover_build_scheduler_groups_settled_total", map[string]string{"state": string(jobgraph.GroupFailed)}))
	require.Equal(t, 0.0, servicetest.Value(t, s, "drover_build_scheduler_jobs_finished_total", map[string]string{"state": string(jobgraph.JobFailed)}))
	require.Equal(t, 1.0, servicetest.Value(t, s, "drover_build_scheduler_groups", map[string]string{"state": string(jobgraph.GroupFailed)}))
	require.Equal(t, 1.0, servicetest.Value(t, s, "drover_build_scheduler_workers", map[string]string{"target": "x86_64-linux"}))
	require.Eventually(t, func() bool { // River's event follows the commit
		v, _ := servicetest.Lookup(servicetest.Metrics(t, worker), "drover_river_job_errors_total",
			map[string]string{"queue": "build_x86_64-linux", "kind": "build_run"})
		return v == 1
	}, 10*time.Second, 50*time.Millisecond)
	w = servicetest.Metrics(t, worker)
	failed := map[string]string{"target": "x86_64-linux", "outcome": "failed"}
	require.Equal(t, 1.0, servicetest.Value(t, w, "drover_build_worker_builds_total", failed))
	require.Equal(t, 2.0, servicetest.Value(t, w, "drover_build_worker_dispatch_seconds", map[string]string{"target": "x86_64-linux"}))
	require.Equal(t, 1.0, servicetest.Value(t, w, "drover_river_job_errors_total", map[string]string{"queue": "build_x86_64-linux", "kind": "build_run"}))
}

func TestBadSubmissionsAreRejectedWithNothingWritten(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := startScheduler(t, testConfig(t, dbURL))

	tests := map[string]struct {
		body   any
		field  string
		detail string
	}{
		"Cycle":      {dag.Submission{Name: "g", Jobs: []dag.JobSpec{sh("a", "true", "b"), sh("b", "true", "a")}}, "jobs", "dependency cycle: a → b → a"},
		"Unknown":    {dag.Submission{Name: "g", Jobs: []dag.JobSpec{sh("a", "true", "zz")}}, "jobs[0].depends_on[0]", "unknown job"},
		"Duplicate":  {dag.Submission{Name: "g", Jobs: []dag.JobSpec{sh("a", "true"), sh("a", "true")}}, "jobs[1].name", "duplicate"},
		"Empty":      {dag.Submission{Name: "g"}, "jobs", "empty"},
		"NoTarget":   {dag.Submission{Name: "g", Jobs: []dag.JobSpec{{Name: "a", Command: []string{"true"}}}}, "jobs[0].target", "no target"},
		"TooManyDep": {dag.Submission{Name: "g", Jobs: manyDeps(11)}, "jobs[11].depends_on", "limit of 10"},
	}
	for name, tt := range tests {
		var p struct{ Field, Detail string }
		require.Equal(t, http.StatusUnprocessableEntity, servicetest.Call(t, http.MethodPost, base+"/v1/groups", tt.body, &p), name)
		require.Equal(t, tt.field, p.Field, name)
		require.Contains(t, p.Detail, tt.detail, name)
	}
	// A YAML `true` left unquoted in a command arrives as a JSON boolean: a 400 naming its place.
	var p struct{ Field, Detail string }
	body := map[string]any{"name": "g", "jobs": []any{map[string]any{"name": "a", "target": "x86_64-linux", "command": []any{true}}}}
	require.Equal(t, http.StatusBadRequest, servicetest.Call(t, http.MethodPost, base+"/v1/groups", body, &p))
	require.Equal(t, "jobs[0].command[0]", p.Field)
	require.Equal(t, "must be a string, not a boolean", p.Detail)
	var n int
	pool := testdb.NewPoolFor(t, dbURL)
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM build_scheduler.groups) + (SELECT count(*) FROM build_scheduler.job_graph)
			+ (SELECT count(*) FROM build_scheduler.river_job WHERE kind = 'build_run')`).Scan(&n))
	require.Zero(t, n, "a rejected submission writes nothing")
}

// TestGroupFloodIsPushedBack submits groups for a target no build-worker works: once its queue
// holds MAX_QUEUED waiting jobs every group is refused with 429, writing nothing, while a group
// for another target is still taken.
func TestGroupFloodIsPushedBack(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	cfg := testConfig(t, dbURL)
	cfg.MaxQueued = 20
	base := startScheduler(t, cfg)
	group := func(target string) dag.Submission {
		return dag.Submission{Name: "g", Jobs: []dag.JobSpec{{Name: "a", Target: target, Command: []string{"true"}}}}
	}
	accepted := 0
	for {
		require.Less(t, accepted, 100000, "a flood was never refused")
		var p struct{ Type, Queue string }
		status := servicetest.Call(t, http.MethodPost, base+"/v1/groups", group("idle"), &p)
		if status == http.StatusTooManyRequests {
			require.Equal(t, "https://drover.dev/problems/busy", p.Type)
			require.Equal(t, "build_idle", p.Queue)
			break
		}
		require.Equal(t, http.StatusCreated, status)
		accepted++
	}
	require.GreaterOrEqual(t, accepted, cfg.MaxQueued)
	require.Less(t, accepted, 2*cfg.MaxQueued)
	require.Equal(t, http.StatusTooManyRequests, servicetest.Call(t, http.MethodPost, base+"/v1/groups", group("idle"), nil))
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", group("busy"), nil),
		"another target's queue has room")

	var groups, builds int
	require.NoError(t, testdb.NewPoolFor(t, dbURL).QueryRow(t.Context(),
		`SELECT (SELECT count(*) FROM build_scheduler.groups),
			(SELECT count(*) FROM build_scheduler.river_job WHERE queue = 'build_idle')`).Scan(&groups, &builds))
	require.Equal(t, accepted+1, groups, "a refused group writes nothing")
	require.Equal(t, accepted, builds)
}

func manyDeps(n int) []dag.JobSpec {
	var jobs []dag.JobSpec
	var names []string
	for i := range n {
		jobs = append(jobs, sh(fmt.Sprint("d", i), "true"))
		names = append(names, fmt.Sprint("d", i))
	}
	return append(jobs, sh("top", "true", names...))
}

func TestWorkerLostMidJobIsRetriedAndGroupCompletes(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := startScheduler(t, testConfig(t, dbURL))

	// The first worker shuts down mid-job: the build is killed and given a new attempt, which
	// succeeds on another worker.
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := workerConfig(t, dbURL, "lost")
	cfg.Slots = 1
	cfg.SoftStopTimeout = 100 * time.Millisecond
	go func() { done <- runWorker(ctx, cfg, ln, io.Discard) }()

	job := dag.JobSpec{Name: "slow", Target: "lost", Command: []string{"sh", "-c", `[ "$DROVER_ATTEMPT" -ge 2 ] || sleep 30`}}
	var g jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", dag.Submission{Name: "lost", Jobs: []dag.JobSpec{job, {Name: "after", Target: "lost", Command: []string{"true"}, DependsOn: []string{"slow"}}}}, &g))
	require.Eventually(t, func() bool {
		var got jobgraph.Group
		servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d", base, g.ID), nil, &got)
		return got.Counts[jobgraph.Running] == 1
	}, 10*time.Second, 20*time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	startWorker(t, dbURL, "lost")
	final := waitGroup(t, base, g.ID)
	require.Equal(t, jobgraph.GroupComplete, final.State)
	var jobs struct{ Items []jobgraph.Job }
	servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, g.ID), nil, &jobs)
	require.Equal(t, 2, jobs.Items[0].Attempt)
	var events struct{ Items []jobgraph.Event }
	servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/events", base, g.ID), nil, &events)
	require.Contains(t, events.Items[len(events.Items)-1].Message, "shut down; attempt 2 replaces it as River job")
}

func TestLogFollowStreamsWhileTheJobRuns(t *testing.T) {
	t.Parallel()
	for name, logs := range logStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testLogFollow(t, logs(t))
		})
	}
}

// startWithLogs starts a scheduler and an x86_64-linux worker on a fresh database, both with the
// log store logs, and returns the scheduler's base URL.
func startWithLogs(t *testing.T, logs logstore.Config) string {
	t.Helper()
	dbURL := testdb.New(t)
	cfg := testConfig(t, dbURL)
	cfg.Config = logs
	base := startScheduler(t, cfg)
	wcfg := workerConfig(t, dbURL, "x86_64-linux")
	wcfg.Config = logs
	startWorkerWith(t, wcfg)
	return base
}

// testLogFollow is the body of TestLogFollow's subtests, one per log store.
func testLogFollow(t *testing.T, logs logstore.Config) { //nolint:thelper // a test body: failures point inside it
	base := startWithLogs(t, logs)

	// The job prints a line, then holds until the test opens the gate, then prints another.
	gate := filepath.Join(t.TempDir(), "gate")
	script := fmt.Sprintf("echo first; while [ ! -e %q ]; do sleep 0.05; done; echo second", gate)
	var g jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", dag.Submission{Name: "follow", Jobs: []dag.JobSpec{sh("talk", script)}}, &g))
	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, g.ID), nil, &jobs))
	jobURL := fmt.Sprintf("%s/v1/jobs/%d", base, jobs.Items[0].ID)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lines := followLog(ctx, t, jobURL+"/log?follow=true")

	require.Equal(t, "=== attempt 1 ===\n", <-lines)
	require.Equal(t, "first\n", <-lines)
	var j jobgraph.Job
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, jobURL, nil, &j))
	require.Equal(t, jobgraph.Running, j.State, "the first chunk arrives while the job runs")

	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	require.Equal(t, "second\n", <-lines)
	_, open := <-lines
	require.False(t, open, "the stream ends when the job finishes")
	require.NoError(t, ctx.Err())
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, jobURL, nil, &j))
	require.Equal(t, jobgraph.Complete, j.State)
	require.False(t, j.LogIncomplete)
}

func TestUnreachableLogStoreMarksTheLogIncompleteNotTheJobFailed(t *testing.T) {
	t.Parallel()
	base := startWithLogs(t, s3LogStore(fakes3.Unreachable(t)))

	var g jobgraph.Group
	sub := dag.Submission{Name: "no-logs", Jobs: []dag.JobSpec{sh("talk", "echo out; echo err >&2"), sh("next", "true", "talk")}}
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", sub, &g))
	final := waitGroup(t, base, g.ID)
	require.Equal(t, jobgraph.GroupComplete, final.State)
	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, g.ID), nil, &jobs))
	require.Len(t, jobs.Items, 2)
	talk := jobs.Items[0]
	require.Equal(t, "talk", talk.Name)
	require.Equal(t, jobgraph.Complete, talk.State)
	require.True(t, talk.LogIncomplete, "its output was lost")
	require.False(t, jobs.Items[1].LogIncomplete, "it printed nothing, so nothing was lost")

	var p struct{ Status int }
	require.Equal(t, http.StatusInternalServerError, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/jobs/%d/log", base, talk.ID), nil, &p),
		"a log that cannot be read is an error, not an empty log")
}

// followLog opens a log with follow=true and sends its lines until the response or ctx ends.
func followLog(ctx context.Context, t *testing.T, url string) <-chan string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+servicetest.Token)
	res, err := http.DefaultClient.Do(req) //nolint:bodyclose // readLines closes it; the linter does not follow goroutines
	require.NoError(t, err)
	lines := make(chan string)
	go readLines(ctx, res, lines)
	require.Equal(t, http.StatusOK, res.StatusCode)
	return lines
}

// readLines sends res's body line by line until it or ctx ends, then closes it and lines.
func readLines(ctx context.Context, res *http.Response, lines chan<- string) {
	defer close(lines)
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		select {
		case lines <- line:
		case <-ctx.Done():
			return
		}
	}
}
