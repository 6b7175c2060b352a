package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/shared/apiclient"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// buildBinary builds this service into a temporary folder, or skips the test when the go
// command is not there to do it.
func buildBinary(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go build is unavailable (%v): killing the batch-runner process needs its binary", err)
	}
	bin := filepath.Join(t.TempDir(), "batch-runner")
	out, err := exec.CommandContext(t.Context(), goCmd, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// process is a batch-runner process the test started.
type process struct {
	cmd  *exec.Cmd
	base string
	log  string
}

// startProcess runs bin with env on a free loopback port and waits until it is ready. The
// process is killed when the test ends, and its log is printed if the test failed.
func startProcess(t *testing.T, bin string, env map[string]string) *process {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	logPath := filepath.Join(t.TempDir(), "batch-runner.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logFile.Close() })

	cmd := exec.CommandContext(t.Context(), bin) // killed at the test's end, as p.kill does
	cmd.Env = []string{"BATCH_RUNNER_HTTP_ADDR=" + addr}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, base: "http://" + addr, log: logPath}
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("batch-runner log (%s):\n%s", p.base, out)
		}
	})
	require.Eventually(t, func() bool {
		return apiclient.Answers(t.Context(), p.base+"/readyz")
	}, 15*time.Second, 20*time.Millisecond, "batch-runner did not become ready")
	return p
}

// kill sends SIGKILL: no shutdown path runs, as when a machine dies.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func processEnv(dbURL string, spinUp time.Duration) map[string]string {
	return map[string]string{
		"BATCH_RUNNER_DATABASE_URL": dbURL, "BATCH_RUNNER_API_TOKENS": servicetest.Token,
		"BATCH_RUNNER_LOG_LEVEL": "info", "BATCH_RUNNER_LOG_FORMAT": "text",
		"BATCH_RUNNER_HOTKEY_URI": "//Alice", "BATCH_RUNNER_CYCLE": "1h",
		// testConfig's proof of work, with a time limit a starved honest executor does not miss
		// (see testConfig) that still leaves the batch within JOB_TIMEOUT.
		"BATCH_RUNNER_GENERATORS": "*=pow", "BATCH_RUNNER_POW_RANGE": strconv.Itoa(testPoWRange), "BATCH_RUNNER_POW_TIME_LIMIT": "4s",
		"BATCH_RUNNER_SPIN_UPS": "*:" + spinUp.String(), "BATCH_RUNNER_MIN_SPIN_UP": "50ms",
		"BATCH_RUNNER_MANIFEST_TIMEOUT": "5s", "BATCH_RUNNER_READY_GRACE": "2s",
		"BATCH_RUNNER_JOB_EXTRA": "500ms", "BATCH_RUNNER_RECEIPT_TIMEOUT": "1s",
		// River retries a job whose process died once it has run longer than its timeout, with
		// RESCUE_AFTER at its default (the shortest job timeout); the leader's lease (15 s,
		// River's) must lapse first, then the rescuer runs at once.
		"BATCH_RUNNER_JOB_TIMEOUT": "8s",
	}
}

// resultRows counts what a batch wrote besides its row: jobs, manifests, receipts, and the
// score_batch jobs waiting for scorer.
func resultRows(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"batch_runner.batch_jobs", "batch_runner.batch_manifests", "batch_runner.batch_receipts", "scorer.river_job"} {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
		out[table] = n
	}
	return out
}

// TestKilledMidBatchRetriesOnce kills the batch-runner process with SIGKILL while its batch is
// in phase 2 (the executors spinning up), and checks that nothing but the running batch row was
// written; a restarted process then gets the job back from River, takes the row over and
// finishes the batch once, with exactly one score_batch job.
func TestKilledMidBatchRetriesOnce(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	const miners = 3
	fleet := startFleet(t, pool, minersim.Config{
		Miners: miners, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond,
	})

	// A spin-up long enough to kill the process during it.
	first := startProcess(t, bin, processEnv(dbURL, 5*time.Second))
	jobID := enqueueBatch(t, first.base)
	require.Eventually(t, func() bool {
		return len(fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0InitialJobRequest"})) == miners
	}, 10*time.Second, 10*time.Millisecond, "the batch did not reach the availability stage")
	first.kill(t)

	// Nothing but the running batch row: no jobs, manifests or receipts, nothing for scorer.
	var state string
	var attempt int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT state, attempt FROM batch_runner.batches WHERE river_job_id = $1`, jobID).Scan(&state, &attempt))
	require.Equal(t, "running", state)
	require.Equal(t, 1, attempt)
	require.Equal(t, map[string]int{
		"batch_runner.batch_jobs": 0, "batch_runner.batch_manifests": 0, "batch_runner.batch_receipts": 0, "scorer.river_job": 0,
	}, resultRows(t, pool))

	// The retry must see every miner complete: a spin-up a loaded machine's accepts cannot miss.
	second := startProcess(t, bin, processEnv(dbURL, 2*time.Second))
	done := waitDone(t, second.base, jobID, 40*time.Second)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	require.Equal(t, 2, done.Attempt, "the retry took the killed attempt's row over")
	requireCounts(t, map[string]int{"completed": miners}, done)
	require.Equal(t, map[string]int{
		"batch_runner.batch_jobs": miners, "batch_runner.batch_manifests": miners, "batch_runner.batch_receipts": 3 * miners, "scorer.river_job": 1,
	}, resultRows(t, pool))
	scores := scoreJobs(t, pool)
	require.Len(t, scores, 1, "the batch is scored once")
	require.Equal(t, done.ID, scores[0].BatchID)
	var batches int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM batch_runner.batches`).Scan(&batches))
	require.Equal(t, 1, batches)
}
