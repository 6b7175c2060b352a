package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/procattr"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// newMakes is a pipeline a data team writes: one decorated make, of a table no worker has heard
// of.
const newMakes = `import drover

pipeline = drover.Pipeline()


@pipeline.computed(target="py_reg_dst", primary_key=["k"], key_source="SELECT k FROM py_reg_src", upstream=["py_reg_src"])
def doubled(key):
    return {"doubled": 2 * key["k"]}
`

// TestPythonServeRegisters takes a new decorated make from code to keys made with one command:
// drover-py serve --register, installed with pip in a fresh venv (offline), defines the
// pipeline's table with a running populate-worker that has never heard of it (with a token of
// its admin scope), serves the make, and the worker makes every key, signed calls and all.
// Under CI=true a missing python3 or venv fails the test instead of skipping it.
func TestPythonServeRegisters(t *testing.T) {
	t.Parallel()
	venv := pythonVenv(t)
	pipInstall(t, venv, pythonSource(t))
	const secret = "register-test-secret"

	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	_, err := pool.Exec(context.Background(), `CREATE TABLE populate_worker.py_reg_src (k int PRIMARY KEY);
		CREATE TABLE populate_worker.py_reg_dst (k int PRIMARY KEY, doubled int NOT NULL);
		INSERT INTO populate_worker.py_reg_src SELECT generate_series(1, 12)`)
	require.NoError(t, err)
	worker := startReplica(t, map[string]string{"DATABASE_URL": dbURL, "WORKER_ID": "py-register", "FUNCTION_SECRET": secret,
		"MAKE_WORKERS": "2", "DB_MAX_CONNS": "6"})

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "newmakes.py"), []byte(newMakes), 0o600))
	port := freePort(t)
	var out syncBuffer
	serve := exec.CommandContext(t.Context(), filepath.Join(venv.dir, "bin", "drover-py"), "serve", "newmakes",
		"--port", strconv.Itoa(port), "--register", worker, "--admin-token", adminToken)
	serve.Dir = dir // the module is imported from the current directory
	serve.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "DROVER_FUNCTION_SECRET="+secret)
	serve.Cancel = func() error { return serve.Process.Signal(syscall.SIGINT) } // Ctrl-C, as a person stops it
	serve.WaitDelay = 10 * time.Second
	serve.Stdout, serve.Stderr = &out, &out
	procattr.DieWithParent(serve)
	require.NoError(t, serve.Start())
	t.Cleanup(func() {
		_ = serve.Wait()
		if t.Failed() {
			t.Logf("drover-py serve's output:\n%s", out.String())
		}
	})

	count := func() (int, int) {
		var rows, right int
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE doubled = 2 * k)
			FROM populate_worker.py_reg_dst`).Scan(&rows, &right))
		return rows, right
	}
	// A hang guard: the venv's Python starts, registers, and the worker schedules and makes.
	require.Eventually(t, func() bool {
		rows, _ := count()
		return rows == 12
	}, time.Minute, 50*time.Millisecond, "every key made by the Python make")
	_, right := count()
	require.Equal(t, 12, right, "rows as the make returned them")
	require.Contains(t, out.String(), "registered py_reg_dst with "+worker+" (new)")

	var table tableView
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, worker+"/v1/tables/py_reg_dst", nil, &table))
	require.Equal(t, tableView{Name: "py_reg_dst", Source: "api", Make: "http"}, table)
}

// freePort is a loopback port nothing listens on as it returns, for a server the test cannot
// hand a listener.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}
