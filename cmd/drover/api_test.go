package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/probe"
	"drover.dev/shared/web"
)

// serviceDocument is the OpenAPI document service serves: the common endpoints, the probe and
// process routes and the service's own document, as the service merges them at start.
func serviceDocument(t *testing.T, service string) map[string]any {
	t.Helper()
	own, err := os.ReadFile(filepath.Join("..", "..", "services", service, "internal", "api", "openapi.json"))
	require.NoError(t, err)
	processes, err := os.ReadFile(filepath.Join("..", "..", "shared", "service", "processes.json"))
	require.NoError(t, err)
	raw, err := web.OpenAPIDocument(service, probe.OpenAPI, processes, own)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc
}

// TestOperationsAreDocumented holds every call drover makes to the services' OpenAPI documents:
// the path and method exist, with the operationId drover names. A route renamed or removed in
// a service fails here, not in an operator's terminal.
func TestOperationsAreDocumented(t *testing.T) {
	t.Parallel()

	docs := map[string]map[string]any{}
	for _, s := range services {
		docs[s.name] = serviceDocument(t, s.name)
	}
	for _, op := range operations {
		on := []string{op.service}
		if op.service == "" {
			on = nil
			for _, s := range services {
				on = append(on, s.name)
			}
		}
		for _, service := range on {
			paths := docs[service]["paths"].(map[string]any)
			item, ok := paths[op.path].(map[string]any)
			require.True(t, ok, "%s documents no path %s (drover's %s)", service, op.path, op.id)
			got, ok := item[strings.ToLower(op.method)].(map[string]any)
			require.True(t, ok, "%s documents no %s %s (drover's %s)", service, op.method, op.path, op.id)
			require.Equal(t, op.id, got["operationId"], "%s %s %s", service, op.method, op.path)
		}
	}
}

func TestRequestURL(t *testing.T) {
	t.Parallel()

	cfg := config{urls: map[string]string{populateWorker: "http://pw:8085"}}
	r := request{op: opIgnoreJob, params: []string{"my table", "ab/c"}}
	require.Equal(t, "http://pw:8085/v1/jobs/my%20table/ab%2Fc/ignore", r.url(cfg))
	r = request{op: opListJobs, query: map[string][]string{"table": {"t"}, "status": {"error"}}}
	require.Equal(t, "http://pw:8085/v1/jobs?status=error&table=t", r.url(cfg))
}

func TestRestriction(t *testing.T) {
	t.Parallel()

	got, err := restriction([]string{"signal_id=3", "signal_id=4", "name=a=b", "ok=true", "x=1.5"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"signal_id": []any{int64(3), int64(4)}, "name": "a=b", "ok": true, "x": 1.5}, got)
	_, err = restriction([]string{"novalue"})
	require.Error(t, err)
}

// An error's problem is printed with the field at fault first, array positions included.
func TestProblemMessageNamesTheField(t *testing.T) {
	t.Parallel()
	require.Equal(t, "jobs[0].command[0]: must be a string, not a boolean", problemMessage(
		`{"type":"https://drover.dev/problems/invalid","title":"Invalid request","status":400,"detail":"must be a string, not a boolean","field":"jobs[0].command[0]"}`))
	require.Equal(t, "batch 7 is running", problemMessage(`{"title":"Conflict","detail":"batch 7 is running"}`))
	require.Equal(t, "Conflict", problemMessage(`{"title":"Conflict"}`))
	require.Equal(t, "upstream answered 502", problemMessage("upstream answered 502"))
}
