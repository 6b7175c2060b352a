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

// killConfig is the configuration of TestKilledWorkerLeavesNoBuild's workers: every setting at
// its default, so River's timeout of a token is a day and only the liveness sweep can take back
// the killed worker's token within the test.
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
// worker, and that River shows the token it held running no longer than LIVENESS_TIMEOUT and
// 30 s after: another worker's liveness sweep gives it back, naming the dead worker (River's own
// rescuer would wait for MAX_JOB_TIMEOUT and TOKEN_SLACK, a day). The rescued token, worked again
// by the other worker, claims nothing (the dead attempt's job is the scheduler's reaper's to hand
// out again, not the token's) and ends cancelled saying so.
func TestKilledWorkerLeavesNoBuild(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	submit(t, schemaPool(t, dbURL), dag.JobSpec{Name: "spawner", Target: "killed", Command: []string{"sh", "-c", spawner, "sh", pidFile}})

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

	pool := schemaPool(t, dbURL)
	client, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	var id int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT id FROM river_job WHERE kind = 'build_run' AND state = 'running'`).Scan(&id),
		"River shows the dead worker's token running")
	cfg, err := killConfig(dbURL)
	require.NoError(t, err)
	startLiveWorker(t, cfg)
	bound := queue.LivenessTimeoutDefault + 30*time.Second
	var token *rivertype.JobRow
	require.Eventually(t, func() bool {
		token, err = client.JobGet(t.Context(), id)
		require.NoError(t, err)
		return token.State != rivertype.JobStateRunning || token.Attempt > 1
	}, bound-time.Since(killed), 100*time.Millisecond, "River still shows the dead worker's token running %s after the kill", bound)
	t.Logf("the dead worker's token was given back %s after the kill", time.Since(killed).Round(time.Millisecond))
	require.Contains(t, token.Errors[0].Error, "rescued from process ")
	require.Contains(t, token.Errors[0].Error, "(build-worker on ")
	require.Eventually(t, func() bool {
		token, err = client.JobGet(t.Context(), id)
		require.NoError(t, err)
		return token.FinalizedAt != nil
	}, 45*time.Second, 50*time.Millisecond, "the rescued token was never worked again")
	require.Equal(t, rivertype.JobStateCancelled, token.State)
	require.Contains(t, token.Errors[len(token.Errors)-1].Error, "nothing to build on target killed")
	var state string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT state::text FROM job_graph`).Scan(&state))
	require.Equal(t, string(jobgraph.Running), state, "the rescued token left the dead attempt's job to the reaper")
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
	c := jobgraph.Claim{JobID: 1, Attempt: 1, Name: "leaver", Timeout: 100 * time.Hour,
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

// submit submits a group of the one job.
func submit(t *testing.T, pool *pgxpool.Pool, job dag.JobSpec) {
	t.Helper()
	tokens, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	plan, err := dag.Validate(dag.Submission{Name: job.Name, Jobs: []dag.JobSpec{job}}, dag.DefaultLimits)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := (&jobgraph.Graph{Tokens: tokens}).SubmitTx(ctx, tx, plan, 1)
		return err
	}))
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
