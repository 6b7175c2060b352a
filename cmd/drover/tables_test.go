package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTables is a populate-worker's tables API as drover sees it: the list, and PUT and DELETE
// of one table, which take the admin token; a definition without a target is refused as the
// worker refuses it (422 naming the field).
type fakeTables struct {
	mu     sync.Mutex
	calls  []string // "METHOD path token"
	bodies map[string]map[string]any
}

func (f *fakeTables) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.calls = append(f.calls, r.Method+" "+r.URL.Path+" "+token)
	name, one := strings.CutPrefix(r.URL.Path, "/v1/tables/")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/tables":
		fmt.Fprint(w, `{"items":[{"name":"example_signal_stats","source":"code","target":"example_signal_stats","primary_key":["signal_id"],"make":"three-part"},`+
			`{"name":"lab_stats","source":"api","target":"lab.stats","primary_key":["subject_id","session"],"make":"http","upstream":["lab.session"]}]}`)
	case r.Method == http.MethodPut && one && token == "admin":
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body["target"] == nil {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"title":"Unprocessable Entity","status":422,"detail":"target \"\" is not a [schema.]table name","field":"target"}`)
			return
		}
		f.bodies[name] = body
		body["name"], body["source"], body["make"] = name, "api", "http"
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(body)
	case r.Method == http.MethodDelete && one && token == "admin":
		w.WriteHeader(http.StatusNoContent)
	case r.Method != http.MethodGet:
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"title":"Forbidden","status":403,"detail":"this token may enqueue work but not define or retire tables"}`)
	default:
		http.NotFound(w, r)
	}
}

// drover runs the command line against a populate-worker at url with env's settings, none of the
// user's own, and returns the exit code, stdout and stderr.
func droverAt(t *testing.T, url string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml") // not the user's own
	require.NoError(t, os.WriteFile(file, []byte("token: t\n"), 0o600))
	all := map[string]string{"DROVER_POPULATE_WORKER_URL": url, "DROVER_CONFIG": file}
	for k, v := range env {
		all[k] = v
	}
	var stdout, stderr strings.Builder
	code := run(context.Background(), args, &stdout, &stderr, func(k string) string { return all[k] })
	return code, stdout.String(), stderr.String()
}

// drover tables lists where each definition comes from; apply puts every definition of a tables
// file, JSON or YAML, with the admin token; delete retires one. A refused definition is the
// worker's problem with its field (exit 4), and the API token alone gets 403 (exit 6).
func TestTablesApplyAndDelete(t *testing.T) {
	t.Parallel()
	fake := &fakeTables{bodies: map[string]map[string]any{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	admin := map[string]string{"DROVER_ADMIN_TOKEN": "admin"}

	code, out, errOut := droverAt(t, srv.URL, nil, "tables")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, `NAME                  SOURCE  TARGET                KEY                 MAKE        UPSTREAM
example_signal_stats  code    example_signal_stats  signal_id           three-part  -
lab_stats             api     lab.stats             subject_id,session  http        lab.session
`, out)

	dir := t.TempDir()
	jsonFile := filepath.Join(dir, "tables.json")
	require.NoError(t, os.WriteFile(jsonFile, []byte(`[
		{"name": "a", "target": "lab.a", "primary_key": ["k"], "key_source": "SELECT k FROM lab.src", "function_url": "http://makes/make/a"},
		{"name": "b", "target": "lab.b", "primary_key": ["k"], "key_source": "SELECT k FROM lab.src", "function_url": "http://makes/make/b", "auto_schedule": false}]`), 0o600))
	code, out, errOut = droverAt(t, srv.URL, admin, "tables", "apply", jsonFile)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "a     api     lab.a")
	require.Contains(t, out, "b     api     lab.b")
	require.Equal(t, false, fake.bodies["b"]["auto_schedule"], "the definition is sent as written")

	yamlFile := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(yamlFile, []byte("name: c\ntarget: lab.c\nprimary_key: [k]\nkey_source: SELECT k FROM lab.src\nfunction_url: http://makes/make/c\n"), 0o600))
	code, out, errOut = droverAt(t, srv.URL, admin, "tables", "apply", yamlFile, "-o", "json")
	require.Equal(t, exitOK, code, errOut)
	var applied []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &applied))
	require.Len(t, applied, 1)
	require.Equal(t, "lab.c", applied[0]["target"])

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"name": "d", "primary_key": ["k"]}`), 0o600))
	code, _, errOut = droverAt(t, srv.URL, admin, "tables", "apply", bad)
	require.Equal(t, exitRefused, code)
	require.Contains(t, errOut, `table d: populate-worker putTable (/v1/tables/{name}): 422 Unprocessable Entity: target: target "" is not a [schema.]table name`)

	code, _, errOut = droverAt(t, srv.URL, nil, "tables", "apply", jsonFile)
	require.Equal(t, exitAuth, code, "the API token has no admin scope: %s", errOut)

	code, out, errOut = droverAt(t, srv.URL, admin, "tables", "delete", "a")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "retired a: no replica schedules or makes its keys; its jobs and rows stay\n", out)

	noName := filepath.Join(dir, "noname.json")
	require.NoError(t, os.WriteFile(noName, []byte(`[{"target": "x"}]`), 0o600))
	code, _, errOut = droverAt(t, srv.URL, admin, "tables", "apply", noName)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "definition 0 has no name")

	fake.mu.Lock()
	defer fake.mu.Unlock()
	require.Equal(t, []string{
		"GET /v1/tables t", "PUT /v1/tables/a admin", "PUT /v1/tables/b admin", "PUT /v1/tables/c admin",
		"PUT /v1/tables/d admin", "PUT /v1/tables/a t", "DELETE /v1/tables/a admin",
	}, fake.calls)
}

// A tables file may hold one definition instead of an array; a file that is not there is an
// error of its own.
func TestReadDefinitionsTakesOneOrMany(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "one.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"name": "x", "target": "t"}`), 0o600))
	defs, err := readDefinitions(path)
	require.NoError(t, err)
	require.Len(t, defs, 1)
	require.Equal(t, "x", defs[0].name)
	require.JSONEq(t, `{"name": "x", "target": "t"}`, string(defs[0].body))
	_, err = readDefinitions(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
