package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// pythonDir is the Python library for data teams, whose tests this package runs.
const pythonDir = "../../clients/python"

// TestHelperPythonWorker is the populate-worker process TestPythonClient starts: the service's
// run, configured from POPULATE_WORKER_* as the command is, serving on the listener passed as
// file descriptor 3, until SIGTERM.
func TestHelperPythonWorker(t *testing.T) {
	t.Parallel()
	if os.Getenv("POPULATE_PYTHON_HELPER") == "" {
		t.Skip("run by TestPythonClient")
	}
	var cfg Config
	require.NoError(t, config.Load(queue.PopulateWorker.EnvPrefix(), &cfg, nil, io.Discard))
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	require.NoError(t, err)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	require.NoError(t, run(ctx, cfg, ln, os.Stdout))
}

// TestPythonClient runs the Python library's unittest suite (clients/python/tests) against a
// populate-worker process on a fresh database: the suite's pipeline (tests/pipeline.py) is
// registered through the tables file `python3 -m drover tables` writes, and its makes are
// served by the suite itself on a listener this test passes it. Under CI=true a missing python3
// fails the test instead of skipping it.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not installed; the Python library's tests need Python 3.10 or later")
		}
		t.Skip("python3 is not installed; the Python library's tests need Python 3.10 or later")
	}
	if out, err := exec.CommandContext(t.Context(), python, "-c", "import sys; sys.exit(sys.version_info < (3, 10))").CombinedOutput(); err != nil {
		t.Fatalf("python3 is older than 3.10, which the Python library needs: %v %s", err, out)
	}
	dir, err := filepath.Abs(pythonDir)
	require.NoError(t, err)

	// The suite's target tables, beside example_signal whose rows it seeds through the API.
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	schema, err := os.ReadFile(filepath.Join(dir, "tests", "schema.sql"))
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), "SET LOCAL search_path TO populate_worker"); err != nil {
			return err
		}
		_, err := tx.Exec(t.Context(), string(schema))
		return err
	}))

	fnLn, fnFile := listenerFile(t)
	workerLn, workerFile := listenerFile(t)
	tablesFile := filepath.Join(t.TempDir(), "tables.json")
	py := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, python, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		return cmd
	}
	out, err := py(t.Context(), "-m", "drover", "tables", "tests.pipeline", "--url", "http://"+fnLn.Addr().String(), "-o", tablesFile).CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The worker: keys are scheduled only when the suite asks and made only by its populate runs
	// (no background make workers), so every make the suite sees is a run's.
	var workerLog bytes.Buffer
	// It gets SIGTERM when the test ends and is killed if it has not stopped 15 s later.
	worker := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperPythonWorker$")
	worker.Cancel = func() error { return worker.Process.Signal(syscall.SIGTERM) }
	worker.WaitDelay = 15 * time.Second
	worker.Env = append(os.Environ(), "POPULATE_PYTHON_HELPER=1")
	for k, v := range map[string]string{
		"DATABASE_URL": dbURL, "API_TOKENS": servicetest.Token, "TABLES_FILE": tablesFile,
		"EXAMPLES_SEED": "true", "MAKE_WORKERS": "0", "RUN_WORKERS": "2", "MIN_SCHEDULING_INTERVAL": "1ms",
		"LISTEN_FLUSH_EVERY": "1h", "SCHEDULE_EVERY": "1h", "DB_MAX_CONNS": "6", "LOG_LEVEL": "warn",
	} {
		worker.Env = append(worker.Env, queue.PopulateWorker.EnvPrefix()+"_"+k+"="+v)
	}
	worker.ExtraFiles = []*os.File{workerFile}
	worker.Stdout, worker.Stderr = &workerLog, &workerLog
	require.NoError(t, worker.Start())
	t.Cleanup(func() {
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("populate-worker's output:\n%s", workerLog.String())
		}
	})
	require.NoError(t, workerFile.Close())

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	suite := py(ctx, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	suite.Env = append(suite.Env, "DROVER_URL=http://"+workerLn.Addr().String(), "DROVER_TOKEN="+servicetest.Token, "DROVER_FUNCTION_FD=3")
	suite.ExtraFiles = []*os.File{fnFile}
	out, err = suite.CombinedOutput()
	t.Logf("python3 -m unittest (clients/python):\n%s", out)
	require.NoError(t, err, "the Python library's tests failed")
	require.NotContains(t, string(out), "needs a populate-worker", "the suite found the worker")

	// What the Python makes answered is in the target, key columns filled in by the worker.
	var rows, right int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE square = signal_id * signal_id
		AND label = 's' || signal_id) FROM populate_worker.py_signal_square`).Scan(&rows, &right))
	require.Positive(t, rows)
	require.Equal(t, rows, right, "rows as the make returned them")
}

// listenerFile listens on a free loopback port and returns the listener (for its address) and a
// duplicate of its descriptor to pass to a child process. The test's own copies close when it
// ends.
func listenerFile(t *testing.T) (net.Listener, *os.File) {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close(); _ = ln.Close() })
	return ln, f
}
