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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/config"
	"drover.dev/shared/procattr"
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
	require.NoError(t, runTest(ctx, cfg, ln, os.Stdout))
}

// TestPythonClient installs the Python library with pip in a fresh venv and runs its unittest
// suite (clients/python/tests, copied elsewhere so that `import drover` is the installed package)
// against a populate-worker process on a fresh database: the suite's pipeline (tests/pipeline.py)
// is registered through the tables file `python -m drover tables` writes, and its makes are
// served by the suite itself on a listener this test passes it, checking the worker's signatures
// with the secret both are given. Under CI=true a missing python3 or venv fails the test instead
// of skipping it.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	venv := pythonVenv(t)
	pipInstall(t, venv, pythonSource(t))
	dir := filepath.Join(t.TempDir(), "suite")
	require.NoError(t, os.CopyFS(filepath.Join(dir, "tests"), os.DirFS(filepath.Join(pythonSource(t), "tests"))))
	python := venv.python
	out, err := exec.CommandContext(t.Context(), python, "-c", "import drover; print(drover.__file__)").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.True(t, strings.HasPrefix(string(out), venv.dir), "the suite imports the installed package, not %s", out)
	const secret = "python-test-secret"

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
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "DROVER_FUNCTION_SECRET="+secret)
		procattr.DieWithParent(cmd)
		return cmd
	}
	out, err = py(t.Context(), "-m", "drover", "tables", "tests.pipeline", "--url", "http://"+fnLn.Addr().String(), "-o", tablesFile).CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The worker: keys are scheduled only when the suite asks and made only by its populate runs
	// (no background make workers), so every make the suite sees is a run's.
	var workerLog bytes.Buffer
	// It gets SIGTERM when the test ends and is killed if it has not stopped 15 s later.
	worker := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperPythonWorker$")
	worker.Cancel = func() error { return worker.Process.Signal(syscall.SIGTERM) }
	worker.WaitDelay = 15 * time.Second
	procattr.DieWithParent(worker)
	worker.Env = append(os.Environ(), "POPULATE_PYTHON_HELPER=1")
	for k, v := range map[string]string{
		"DATABASE_URL": dbURL, "API_TOKENS": servicetest.Token, "TABLES_FILE": tablesFile,
		"EXAMPLES_SEED": "true", "MAKE_WORKERS": "2", "FEED_OFF": "true", "MIN_SCHEDULING_INTERVAL": "1ms",
		"LISTEN_FLUSH_EVERY": "1h", "SCHEDULE_EVERY": "1h", "DB_MAX_CONNS": "6", "LOG_LEVEL": "warn", "FUNCTION_SECRET": secret,
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
	t.Logf("python -m unittest (clients/python, installed in a venv):\n%s", out)
	require.NoError(t, err, "the Python library's tests failed")
	require.NotContains(t, string(out), "needs a populate-worker", "the suite found the worker")
	require.NotContains(t, string(out), "HTTP 401", "the worker's calls were signed as the makes want")

	// What the Python makes answered is in the target, key columns filled in by the worker.
	var rows, right int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE square = signal_id * signal_id
		AND label = 's' || signal_id) FROM populate_worker.py_signal_square`).Scan(&rows, &right))
	require.Positive(t, rows)
	require.Equal(t, rows, right, "rows as the make returned them")
}

// TestPythonPackage installs the Python library as its README says, with pip and offline (the
// in-tree build backend needs nothing from PyPI): editable, where the package is the source
// folder, then from its sdist, where it is a copy with py.typed and the drover command.
func TestPythonPackage(t *testing.T) {
	t.Parallel()
	venv := pythonVenv(t)
	src := pythonSource(t)
	where := func() string {
		out, err := exec.CommandContext(t.Context(), venv.python, "-c", "import drover; print(drover.__file__)").CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}

	pipInstall(t, venv, "-e", src)
	require.Equal(t, filepath.Join(src, "drover", "__init__.py"), where(), "editable: the source itself")

	sdistDir := t.TempDir()
	build := exec.CommandContext(t.Context(), venv.python, "-c", "import sys; sys.path.insert(0, '_build'); import backend; print(backend.build_sdist(sys.argv[1]))", sdistDir)
	build.Dir = src
	build.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	pipInstall(t, venv, filepath.Join(sdistDir, strings.TrimSpace(string(out))))
	installed := where()
	require.True(t, strings.HasPrefix(installed, venv.dir), "from the sdist: a copy in the venv, not %s", installed)
	require.FileExists(t, filepath.Join(filepath.Dir(installed), "py.typed"))
	out, err = exec.CommandContext(t.Context(), filepath.Join(venv.dir, "bin", "drover-py"), "serve", "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--insecure")
	require.Contains(t, string(out), "usage: drover-py serve", "the command names itself as typed")
	require.NoFileExists(t, filepath.Join(venv.dir, "bin", "drover"), "drover is the Go operator CLI's name")
}

// venv is a Python virtual environment: its folder and its interpreter.
type venv struct{ dir, python string }

// pythonVenv creates a fresh venv (with pip, from the interpreter's own ensurepip) with the
// machine's python3, 3.10 or later. It skips the test without one, or fails it under CI=true.
func pythonVenv(t *testing.T) venv {
	t.Helper()
	unavailable := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		unavailable("python3 is not installed; the Python library's tests need Python 3.10 or later")
	}
	if out, err := exec.CommandContext(t.Context(), python, "-c", "import sys; sys.exit(sys.version_info < (3, 10))").CombinedOutput(); err != nil {
		t.Fatalf("python3 is older than 3.10, which the Python library needs: %v %s", err, out)
	}
	if err := exec.CommandContext(t.Context(), python, "-c", "import ensurepip, venv").Run(); err != nil {
		unavailable("python3 cannot create a venv with pip (on Debian: apt-get install python3-venv)")
	}
	v := venv{dir: filepath.Join(t.TempDir(), "venv")}
	out, err := exec.CommandContext(t.Context(), python, "-m", "venv", v.dir).CombinedOutput()
	require.NoError(t, err, "python3 -m venv: %s", out)
	v.python = filepath.Join(v.dir, "bin", "python")
	return v
}

// pipInstall runs pip install args in v, as the README says to, offline: nothing is fetched.
func pipInstall(t *testing.T, v venv, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), v.python, append([]string{"-m", "pip", "install", "--quiet"}, args...)...)
	cmd.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pip install %v: %s", args, out)
}

// pythonSource is the absolute path of the Python library's folder.
func pythonSource(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(pythonDir)
	require.NoError(t, err)
	return dir
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
