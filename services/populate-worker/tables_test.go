package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/apiclient"
	"drover.dev/shared/procattr"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// adminToken is the admin scope's token of the replicas these tests start; servicetest.Token is
// their API (enqueue) token.
const adminToken = "admin-token"

// startReplica starts a populate-worker replica as a process of its own (TestHelperPythonWorker,
// configured from POPULATE_WORKER_* as the command is) with env on top of a small replica's
// settings, and returns its base URL once it is ready. It gets SIGTERM when the test ends; its
// output is shown when the test fails.
func startReplica(t *testing.T, env map[string]string) string {
	t.Helper()
	ln, file := listenerFile(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperPythonWorker$")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	procattr.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "POPULATE_PYTHON_HELPER=1")
	settings := map[string]string{"API_TOKENS": servicetest.Token, "ADMIN_TOKENS": adminToken, "EXAMPLES": "false",
		"MAKE_WORKERS": "1", "DB_MAX_CONNS": "5", "LOG_LEVEL": "warn", "MIN_SCHEDULING_INTERVAL": "1ms",
		"LISTEN_FLUSH_EVERY": "50ms"}
	for k, v := range env {
		settings[k] = v
	}
	for k, v := range settings {
		cmd.Env = append(cmd.Env, queue.PopulateWorker.EnvPrefix()+"_"+k+"="+v)
	}
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.ExtraFiles = []*os.File{file}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("replica %s's output:\n%s", settings["WORKER_ID"], log.String())
		}
	})
	require.NoError(t, file.Close())
	base := "http://" + ln.Addr().String()
	// A hang guard: a replica on a loaded machine takes seconds to start.
	require.Eventually(t, func() bool { return apiclient.Answers(t.Context(), base+"/readyz") }, time.Minute, 20*time.Millisecond,
		"replica %s never got ready", settings["WORKER_ID"])
	return base
}

// rendezvousFunction is an HTTP function make of v = 10 * k. The first calls of the table named
// rendezvous wait until two of them are in flight at once: with one make worker per replica,
// that is both replicas making its keys.
type rendezvousFunction struct {
	rendezvous string
	mu         sync.Mutex
	inFlight   int
	met        chan struct{}
	calls      map[string]int // by table
}

func newRendezvousFunction(table string) *rendezvousFunction {
	return &rendezvousFunction{rendezvous: table, met: make(chan struct{}), calls: map[string]int{}}
}

func (f *rendezvousFunction) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Table string
		Key   struct{ K int }
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.calls[req.Table]++
	wait := req.Table == f.rendezvous
	if wait {
		f.inFlight++
		if f.inFlight == 2 {
			select {
			case <-f.met:
			default:
				close(f.met)
			}
		}
	}
	f.mu.Unlock()
	if wait {
		select {
		case <-f.met:
		case <-time.After(10 * time.Second): // a hang guard: the test then says which replica made nothing
		case <-r.Context().Done():
		}
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"rows": []map[string]int{{"v": 10 * req.Key.K}}})
}

// tableView is what the tests read of a computed table.
type tableView struct {
	Name, Source, Make string
}

// TestTablesOverTheAPI defines a computed table over the API against two running replicas
// (processes of their own): both schedule and make its keys within 10 s of the PUT, without a
// restart; a bad definition is a 422 naming the field and an enqueue-scope token a 403; retired,
// the table is scheduled by neither replica any more (an upstream insert schedules only the
// other table reading it), while its jobs stay readable.
func TestTablesOverTheAPI(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	sql := func(stmt string) {
		t.Helper()
		_, err := pool.Exec(context.Background(), stmt)
		require.NoError(t, err)
	}
	sql(`CREATE TABLE populate_worker.reg_src (k int PRIMARY KEY);
		CREATE TABLE populate_worker.reg_dst (k int PRIMARY KEY, v int NOT NULL);
		CREATE TABLE populate_worker.ctl_dst (k int PRIMARY KEY, v int NOT NULL);
		INSERT INTO populate_worker.reg_src SELECT generate_series(1, 30)`)
	fn := newRendezvousFunction("reg")
	srv := httptest.NewServer(fn)
	t.Cleanup(srv.Close)
	// ctl, from the tables file, reads the same upstream table as the table the test defines.
	tablesFile := filepath.Join(t.TempDir(), "tables.json")
	require.NoError(t, os.WriteFile(tablesFile, fmt.Appendf(nil, `[{"name": "ctl", "target": "ctl_dst", "primary_key": ["k"],
		"key_source": "SELECT k FROM reg_src", "upstream": ["reg_src"], "function_url": %q}]`, srv.URL+"/make/ctl"), 0o600))
	replicas := map[string]string{}
	for _, id := range []string{"replica-a", "replica-b"} {
		replicas[id] = startReplica(t, map[string]string{"DATABASE_URL": dbURL, "WORKER_ID": id, "TABLES_FILE": tablesFile,
			"KEEP_SUCCESS": "true"})
	}
	a, b := replicas["replica-a"], replicas["replica-b"]
	count := func(sql string) int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), sql).Scan(&n))
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		// A hang guard, and the bound the replicas are held to: a change is followed within 10 s.
		require.Eventually(t, ok, 10*time.Second, 20*time.Millisecond, what)
	}
	// A hang guard: the replicas' first periodic schedule, at start, schedules the file's table.
	require.Eventually(t, func() bool { return count(`SELECT count(*) FROM populate_worker.ctl_dst`) == 30 },
		time.Minute, 20*time.Millisecond, "ctl, seeded from the tables file, is made")

	def := map[string]any{"target": "reg_dst", "primary_key": []string{"k"}, "key_source": "SELECT k FROM reg_src",
		"upstream": []string{"reg_src"}, "function_url": srv.URL + "/make/reg"}
	with := func(field string, v any) map[string]any {
		out := map[string]any{}
		for k, v := range def {
			out[k] = v
		}
		out[field] = v
		return out
	}
	var prob struct{ Field, Detail string }
	require.Equal(t, http.StatusForbidden, servicetest.CallAs(t, servicetest.Token, http.MethodPut, a+"/v1/tables/reg", def, &prob),
		"an enqueue-scope token: %+v", prob)
	require.Equal(t, http.StatusUnauthorized, servicetest.CallAs(t, "nobody", http.MethodPut, a+"/v1/tables/reg", def, nil))
	for field, bad := range map[string]any{"target": "nope", "key_source": "SELECT 1 AS j", "function_url": "not a url", "upstream[0]": []string{"nope"}} {
		prob.Field = ""
		name := field
		if field == "upstream[0]" {
			name = "upstream"
		}
		require.Equal(t, http.StatusUnprocessableEntity, servicetest.CallAs(t, adminToken, http.MethodPut, a+"/v1/tables/reg", with(name, bad), &prob), field)
		require.Equal(t, field, prob.Field, "%+v", prob)
	}
	require.Equal(t, http.StatusNotFound, servicetest.CallAs(t, servicetest.Token, http.MethodGet, b+"/v1/tables/reg", nil, nil), "nothing was written")

	var put tableView
	require.Equal(t, http.StatusCreated, servicetest.CallAs(t, adminToken, http.MethodPut, a+"/v1/tables/reg", def, &put))
	require.Equal(t, tableView{Name: "reg", Source: "api", Make: "http"}, put)
	var got tableView
	require.Equal(t, http.StatusOK, servicetest.CallAs(t, servicetest.Token, http.MethodGet, b+"/v1/tables/reg", nil, &got), "the other replica knows it at once")
	require.Equal(t, put, got)
	waitFor("the keys of reg are made", func() bool { return count(`SELECT count(*) FROM populate_worker.reg_dst`) == 30 })
	require.Equal(t, []string{"replica-a", "replica-b"}, makers(t, pool, "reg"), "both replicas made keys of reg")

	// Both replicas schedule it: their change listeners follow new upstream rows, and an explicit
	// schedule on each is exact.
	sql(`INSERT INTO populate_worker.reg_src SELECT generate_series(31, 40)`)
	var res struct{ Scheduled int }
	for base, keys := range map[string][]int{a: {31, 32, 33, 34, 35}, b: {36, 37, 38, 39, 40}} {
		require.Equal(t, http.StatusOK, servicetest.CallAs(t, servicetest.Token, http.MethodPost, base+"/v1/tables/reg/schedule",
			map[string]any{"restriction": map[string]any{"k": keys}}, &res))
	}
	waitFor("the new keys of reg are made", func() bool { return count(`SELECT count(*) FROM populate_worker.reg_dst`) == 40 })

	var list struct{ Items []tableView }
	require.Equal(t, http.StatusOK, servicetest.CallAs(t, servicetest.Token, http.MethodGet, b+"/v1/tables", nil, &list))
	require.Equal(t, []tableView{{Name: "ctl", Source: "file", Make: "http"}, {Name: "reg", Source: "api", Make: "http"}}, list.Items)

	// Retired through b, the table is gone from both replicas: neither schedules it any more.
	require.Equal(t, http.StatusForbidden, servicetest.CallAs(t, servicetest.Token, http.MethodDelete, b+"/v1/tables/reg", nil, nil))
	require.Equal(t, http.StatusNoContent, servicetest.CallAs(t, adminToken, http.MethodDelete, b+"/v1/tables/reg", nil, nil))
	require.Equal(t, http.StatusNotFound, servicetest.CallAs(t, adminToken, http.MethodDelete, b+"/v1/tables/reg", nil, nil), "retired already")
	waitFor("a hears of the retirement", func() bool {
		return servicetest.CallAs(t, servicetest.Token, http.MethodPost, a+"/v1/tables/reg/schedule", map[string]any{}, nil) == http.StatusNotFound
	})
	sql(`INSERT INTO populate_worker.reg_src SELECT generate_series(41, 50)`)
	waitFor("ctl, reading the same upstream, makes the new keys", func() bool { return count(`SELECT count(*) FROM populate_worker.ctl_dst`) == 50 })
	require.Zero(t, count(`SELECT count(*) FROM populate_worker.jobs WHERE table_name = 'reg' AND (key->>'k')::int > 40`),
		"the upstream insert scheduled nothing of the retired table")
	require.Equal(t, 40, count(`SELECT count(*) FROM populate_worker.reg_dst`), "its rows stay")
	var jobs struct {
		Items []struct {
			KeyHash string `json:"key_hash"`
			Status  string
		}
	}
	require.Equal(t, http.StatusOK, servicetest.CallAs(t, servicetest.Token, http.MethodGet, a+"/v1/jobs?table=reg&limit=1000", nil, &jobs))
	require.Len(t, jobs.Items, 40, "its jobs stay readable")
	require.Equal(t, http.StatusOK, servicetest.CallAs(t, servicetest.Token, http.MethodGet, a+"/v1/jobs/reg/"+jobs.Items[0].KeyHash, nil, nil))
	fn.mu.Lock()
	defer fn.mu.Unlock()
	require.Equal(t, 40, fn.calls["reg"], "each key of reg made once")
}

// makers lists the River clients (the replicas' WORKER_IDs) that ran table's makes.
func makers(t *testing.T, pool *pgxpool.Pool, table string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT DISTINCT attempted_by[array_upper(attempted_by, 1)]
		FROM populate_worker.river_job WHERE kind = 'populate_make' AND args->>'table' = $1 AND state = 'completed'`, table)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		out = append(out, id)
	}
	require.NoError(t, rows.Err())
	sort.Strings(out)
	return out
}
