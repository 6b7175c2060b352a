package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/signing"
	"drover.dev/services/populate-worker/internal/wiring"
)

// With FUNCTION_SECRET the worker signs its calls to function makes: the example energy
// function, which checks them as an external function would, refuses a call without the
// signature, one signed with another secret or too long ago, and makes every key the worker asks.
func TestSignedFunctionMakes(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Examples: true, ExamplesSeed: true, FunctionSecret: []string{"s3cret"},
		Settings: wiring.Settings{MinSchedulingInterval: time.Millisecond}})
	var seed struct {
		SignalIDs []int64 `json:"signal_ids"`
	}
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": 4}, &seed))

	body := []byte(`{"table":"example_signal_energy","key":{"signal_id":` + strconv.FormatInt(seed.SignalIDs[0], 10) + `}}`)
	for name, header := range map[string]string{
		"unsigned":     "",
		"other secret": signing.Sign([]string{"other"}, time.Now(), body),
		"stale":        signing.Sign([]string{"s3cret"}, time.Now().Add(-signing.Tolerance-time.Minute), body),
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/examples/functions/energy", bytes.NewReader(body))
		require.NoError(t, err)
		if header != "" {
			req.Header.Set(signing.Header, header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var doc struct {
			Status int
			Detail string
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), name)
		require.Equal(t, http.StatusUnauthorized, doc.Status, name)
		require.NotEmpty(t, doc.Detail, name)
	}

	var res populateResult
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/tables/example_signal_energy/populate?wait=30",
		map[string]any{"processes": 2}, &res))
	require.Equal(t, "done", res.State, "%+v", res.ErrorList)
	require.Equal(t, 4, res.SuccessCount, "every call was signed and accepted")
}

// A table of the tables file may have its own secret, in the variable its function_secret_env
// names; the others are signed with FUNCTION_SECRET, or go unsigned without it.
func TestFunctionSecretPerTable(t *testing.T) {
	t.Parallel()
	table := func(name, env string) map[string]any {
		return map[string]any{"name": name, "target": name, "primary_key": []string{"id"}, "key_source": "SELECT 1 AS id",
			"function_url": "http://fn.example/make/" + name, "function_secret_env": env}
	}
	load := func(t *testing.T, tables ...map[string]any) *populate.Registry {
		t.Helper()
		path := filepath.Join(t.TempDir(), "tables.json")
		raw, err := json.Marshal(tables)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, raw, 0o600))
		reg := populate.NewRegistry()
		require.NoError(t, reg.LoadFile(path))
		return reg
	}
	env := map[string]string{"LAB_SECRET": "lab-1, lab-0"}
	getenv := func(k string) string { return env[k] }
	secretsFor := func(t *testing.T, keys signing.Keys, name string) []string {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://fn.example/make/"+name, nil)
		require.NoError(t, err)
		return keys(req)
	}

	t.Run("own and the service's", func(t *testing.T) {
		t.Parallel()
		keys, unsigned, err := functionKeys(load(t, table("lab", "LAB_SECRET"), table("other", "")), []string{"svc"}, getenv)
		require.NoError(t, err)
		require.Empty(t, unsigned)
		require.Equal(t, []string{"lab-1", "lab-0"}, secretsFor(t, keys, "lab"))
		require.Equal(t, []string{"svc"}, secretsFor(t, keys, "other"))
	})
	t.Run("without FUNCTION_SECRET the others are unsigned", func(t *testing.T) {
		t.Parallel()
		keys, unsigned, err := functionKeys(load(t, table("lab", "LAB_SECRET"), table("other", "")), nil, getenv)
		require.NoError(t, err)
		require.Equal(t, []string{"other"}, unsigned)
		require.Empty(t, secretsFor(t, keys, "other"))
	})
	t.Run("an unset variable is a configuration error", func(t *testing.T) {
		t.Parallel()
		_, _, err := functionKeys(load(t, table("lab", "NOT_SET")), []string{"svc"}, getenv)
		require.ErrorContains(t, err, "table lab: NOT_SET, its function_secret_env, is not set")
	})
}
