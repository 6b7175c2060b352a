package buildworker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/config"
	"drover.dev/shared/procattr"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// killedWorkerEnv makes the test binary a build-worker of target "killed" on the database it names.
const killedWorkerEnv = "BUILDWORKER_TEST_KILLED_WORKER"

// spawner starts two background sleeps and writes its own pid and theirs to $1, then waits:
// a shell with grandchildren in its process group, none of which gets the parent-death signal.
const spawner = `sleep 30 & a=$!; sleep 30 & echo $$ $a $! > "$1.tmp"; mv "$1.tmp" "$1"; wait`

// spawnOnce appends its attempt to $1.runs, and is spawner on attempt 1 only: a later attempt
// succeeds at once.
const spawnOnce = `echo "$DROVER_ATTEMPT" >> "$1.runs"; if [ "$DROVER_ATTEMPT" = 1 ]; then ` + spawner + `; fi`

// runs reads the attempts spawnOnce recorded in file.runs.
func runs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file + ".runs")
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// killConfig is the configuration of TestKilledWorkerLeavesNoBuild's workers: every setting at
// its default, so River's timeout of the build's River job is half an hour and only the liveness
// sweep can take it back within the test.
func killConfig(dbURL string) (Config, error) {
	var cfg Config
	if err := config.Defaults(&cfg); err != nil {
		return cfg, err
	}
	cfg.Common, cfg.HTTPAddr, cfg.Targets, cfg.Slots = servicetest.Config(dbURL), "127.0.0.1:0", []string{"killed"}, 1
	return cfg, nil
}

// onlyBuilds registers the build_run worker alone.
func onlyBuilds(workers *river.Workers, _ *pgxpool.Pool, _ *jobgraph.Graph, build river.Worker[queue.BuildRunArgs]) []*river.PeriodicJob {
	river.AddWorker(workers, build)
	return nil
}

// runKilledWorker is the worker process TestKilledWorkerLeavesNoBuild kills: the real Run.
func runKilledWorker(dbURL string) int {
	cfg, err := killConfig(dbURL)
	if err == nil {
		err = Run(context.Background(), cfg, onlyBuilds, nil, io.Discard)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKilledWorkerLeavesNoBuild SIGKILLs a build-worker process while its build runs a shell
// that started grandchildren, with default settings, and requires that none of them outlives the
// worker; that River shows the build's River job running no longer than LIVENESS_TIMEOUT and 30 s
// after, when another worker's liveness sweep ends it, with an error naming the dead worker and
// the attempt that replaced it (River's own rescuer would wait for the build's timeout, half an
// hour); and that the build and its dependent are then done once, by that new attempt, with no
// River job left running.
func TestKilledWorkerLeavesNoBuild(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	pool := schemaPool(t, dbURL)
	group := submitGroup(t, pool, dag.JobSpec{Name: "spawner", Target: "killed", Command: []string{"sh", "-c", spawnOnce, "sh", pidFile}},
		dag.JobSpec{Name: "after", Target: "killed", Command: []string{"true"}, DependsOn: []string{"spawner"}})

	var stderr bytes.Buffer
	worker := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	worker.Env = append(os.Environ(), killedWorkerEnv+"="+dbURL)
	worker.Stderr = &stderr
	procattr.DieWithParent(worker)
	require.NoError(t, worker.Start())
	var pids []int
	require.Eventually(t, func() bool {
		pids = readPids(t, pidFile)
		return len(pids) == 3
	}, 30*time.Second, 20*time.Millisecond, "the build never started; worker stderr: %s", &stderr)
	for _, pid := range pids {
		require.True(t, alive(pid), "pid %d of the build is not running before the kill", pid)
	}

	require.NoError(t, worker.Process.Kill())
	_ = worker.Wait()
	killed := time.Now()
	require.Eventually(t, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond, "a process of the killed worker's build survived: %v", pids)
	t.Logf("all %d processes of the build gone %s after the worker's SIGKILL", len(pids), time.Since(killed))

	client, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	var id int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT id FROM river_job WHERE kind = 'build_run' AND state = 'running'`).Scan(&id),
		"River shows the dead worker's build running")
	cfg, err := killConfig(dbURL)
	require.NoError(t, err)
	startLiveWorker(t, cfg)
	bound := queue.LivenessTimeoutDefault + 30*time.Second
	var dead *rivertype.JobRow
	require.Eventually(t, func() bool {
		dead, err = client.JobGet(t.Context(), id)
		require.NoError(t, err)
		return dead.State != rivertype.JobStateRunning
	}, bound-time.Since(killed), 100*time.Millisecond, "River still shows the dead worker's build running %s after the kill", bound)
	t.Logf("the dead worker's build was given a new attempt %s after the kill", time.Since(killed).Round(time.Millisecond))
	require.Equal(t, rivertype.JobStateDiscarded, dead.State)
	require.Contains(t, dead.Errors[0].Error, "rescued from process ")
	require.Contains(t, dead.Errors[0].Error, "(build-worker on ")
	require.Regexp(t, `attempt 2 replaces it as River job \d+`, dead.Errors[0].Error)

	require.Eventually(t, func() bool {
		g, err := jobgraph.GetGroup(t.Context(), pool, group)
		require.NoError(t, err)
		return g.State == jobgraph.GroupComplete
	}, 30*time.Second, 50*time.Millisecond, "the group did not complete after the new attempt")
	require.Equal(t, []string{"1", "2"}, runs(t, pidFile), "the killed attempt, then the new one, once")
	var attempt int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT attempt FROM job_graph WHERE name = 'spawner'`).Scan(&attempt))
	require.Equal(t, 2, attempt)
	// River completes a succeeded build's River job once its worker's report has committed.
	require.Eventually(t, func() bool {
		var running int
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM river_job WHERE kind = 'build_run' AND state = 'running'`).Scan(&running))
		return running == 0
	}, 10*time.Second, 20*time.Millisecond, "a build_run River job is left running")
	var args []string
	rows, err := pool.Query(t.Context(), `SELECT args->>'job_name' || ' attempt ' || (args->>'attempt') || ': ' || state
		FROM river_job WHERE kind = 'build_run' ORDER BY id`)
	require.NoError(t, err)
	args, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"spawner attempt 1: discarded", "spawner attempt 2: completed", "after attempt 1: completed"}, args,
		"each River job names the build it ran")
}

// TestLostLivenessKillsTheBuild makes a build-worker find its liveness record gone while a build
// runs a shell with grandchildren, as a process does that a sweep declared dead while it could
// not renew: the build's whole process group is killed, its River job ends naming the attempt
// that replaced it, and that attempt builds the job.
func TestLostLivenessKillsTheBuild(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	pool := schemaPool(t, dbURL)
	group := submitGroup(t, pool, dag.JobSpec{Name: "spawner", Target: "lost", Command: []string{"sh", "-c", spawnOnce, "sh", pidFile}})
	cfg, err := killConfig(dbURL)
	require.NoError(t, err)
	cfg.Targets = []string{"lost"}
	cfg.LivenessTimeout = 3 * time.Second // renewals every half second
	startLiveWorker(t, cfg)
	var pids []int
	require.Eventually(t, func() bool {
		pids = readPids(t, pidFile)
		return len(pids) == 3
	}, 30*time.Second, 20*time.Millisecond, "the build never started")

	_, err = pool.Exec(t.Context(), `DELETE FROM processes WHERE name = 'build-worker'`)
	require.NoError(t, err)
	for _, pid := range pids {
		require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 5*time.Millisecond,
			"pid %d of the build survived its worker's lost liveness", pid)
	}
	require.Eventually(t, func() bool {
		g, err := jobgraph.GetGroup(t.Context(), pool, group)
		require.NoError(t, err)
		return g.State == jobgraph.GroupComplete
	}, 30*time.Second, 50*time.Millisecond, "the new attempt did not build the job")
	require.Equal(t, []string{"1", "2"}, runs(t, pidFile))
	var state, lastErr string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT state::text, errors[array_length(errors, 1)]->>'error'
		FROM river_job WHERE kind = 'build_run' AND args->>'attempt' = '1'`).Scan(&state, &lastErr))
	require.Equal(t, "cancelled", state)
	require.Contains(t, lastErr, "lost its liveness")
	require.Regexp(t, `attempt 2 replaces it as River job \d+`, lastErr)
}

// startLiveWorker runs a worker with cfg in this process until the test ends.
func startLiveWorker(t *testing.T, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- Run(ctx, cfg, onlyBuilds, nil, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-stopped)
	})
}

// TestBuildLeavesNothingBehind runs a command that exits leaving a background process in its
// group: the process is killed when the command ends, and the build succeeds at once.
func TestBuildLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	pool := testdb.NewPool(t, queue.BuildScheduler.Schema())
	pidFile := filepath.Join(t.TempDir(), "pids")
	// The background process sleeps for days, and the build's timeout is as long: a run that
	// waited for it would not return before the test binary's own timeout.
	c := jobgraph.Build{JobID: 1, Attempt: 1, Name: "leaver", Timeout: 100 * time.Hour,
		Command: []string{"sh", "-c", `sleep 360000 & echo $! > "$1"`, "sh", pidFile}}
	logs := newLogWriter(context.Background(), logstore.Postgres{DB: pool}, c.JobID, c.Attempt)
	var groups groupReaper
	out := run(context.Background(), t.TempDir(), c, logs, &groups, nil)
	logs.Close()
	require.Equal(t, queue.BuildSucceeded, out.result, out.err)
	pids := readPids(t, pidFile)
	require.Len(t, pids, 1)
	require.Eventually(t, func() bool { return !alive(pids[0]) }, 5*time.Second, 5*time.Millisecond)
}

// schemaPool is a pool on dbURL with the scheduler's schema first on the search path.
func schemaPool(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = queue.BuildScheduler.Schema() + ",public"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// submitGroup submits a group of jobs, named after the first, with three attempts each, and
// returns its id.
func submitGroup(t *testing.T, pool *pgxpool.Pool, jobs ...dag.JobSpec) int64 {
	t.Helper()
	builds, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	plan, err := dag.Validate(dag.Submission{Name: jobs[0].Name, Jobs: jobs}, dag.DefaultLimits)
	require.NoError(t, err)
	ctx := context.Background()
	var id int64
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		id, err = (&jobgraph.Graph{Builds: builds}).SubmitTx(ctx, tx, plan, 3)
		return err
	}))
	return id
}

// readPids reads the pids a command wrote to file, none while it is not there yet.
func readPids(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

// alive reports whether process pid exists and is not a zombie (an orphan killed in a container
// whose init does not reap stays a zombie, but runs nothing).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}
