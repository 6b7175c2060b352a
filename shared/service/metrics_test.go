package service

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"drover.dev/queue"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// TestRiverMetricsOfEveryService sends a probe from a service to itself and reads what its
// /metrics says of the River jobs that carried it. It also checks that the service exposes every
// family the dashboards and alert rules name outside the services' own prefixes (River's, the
// gauge statements' failures, the pool's, HTTP's, the enqueue pushback's).
func TestRiverMetricsOfEveryService(t *testing.T) {
	t.Parallel()
	base := startService(t, queue.Scorer, testdb.New(t))
	status, body := call(t, http.MethodPost, base+"/v1/probes", servicetest.Token, map[string]string{"target": "scorer"})
	require.Equal(t, http.StatusCreated, status)
	require.Eventually(t, func() bool {
		_, got := call(t, http.MethodGet, fmt.Sprintf("%s/v1/probes/%d", base, int64(body["id"].(float64))), servicetest.Token, nil)
		return got["acked_at"] != nil
	}, 20*time.Second, 50*time.Millisecond)

	probe := map[string]string{"queue": queue.QueueProbe, "kind": "probe"}
	require.Eventually(t, func() bool {
		v, ok := servicetest.Lookup(servicetest.Metrics(t, base), "drover_river_job_attempts_total", map[string]string{
			"queue": queue.QueueProbe, "kind": "probe_ack", "outcome": "completed"})
		return ok && v == 1
	}, 10*time.Second, 50*time.Millisecond, "the probe's acknowledgement was counted")
	m := servicetest.Metrics(t, base)
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_river_job_wait_seconds", probe))
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_river_job_run_seconds", probe))
	require.Equal(t, 0.0, servicetest.Value(t, m, "drover_river_jobs", map[string]string{"queue": queue.QueueProbe, "state": "available"}))
	require.Equal(t, 0.0, servicetest.Value(t, m, "drover_river_oldest_available_seconds", map[string]string{"queue": queue.QueueProbe}))
	require.Equal(t, 5.0, servicetest.Value(t, m, "drover_db_pool_max_connections", nil), "the pool's size (servicetest.Config)")
	require.Positive(t, servicetest.Value(t, m, "drover_db_pool_acquires_total", nil))
	for _, prefix := range []string{"drover_river_", "drover_metrics_", "drover_db_", "http_", "drover_http_", "drover_queue_"} {
		servicetest.RequireMetrics(t, base, servicetest.NamedMetrics(t, prefix)...)
	}
}

// owners are the prefixes of the families the dashboards and alert rules may name, each checked
// against a running process by a test: River's, the gauge failures', the pool's and HTTP's here, each
// service's in its own main test.
var owners = []string{
	"drover_river_", "drover_metrics_", "drover_db_", "http_", "drover_http_", "drover_queue_", "drover_miner_sync_", "drover_batch_runner_", "drover_scorer_",
	"drover_build_scheduler_", "drover_build_worker_", "drover_populate_worker_",
}

func TestEveryMetricTheDashboardsAndRulesNameHasAnOwner(t *testing.T) {
	t.Parallel()
	all := servicetest.NamedMetrics(t, "")
	require.NotEmpty(t, all)
	for _, name := range all {
		owned := slices.ContainsFunc(owners, func(p string) bool { return strings.HasPrefix(name, p) })
		require.True(t, owned, "%s is named by a dashboard or rule but no test checks a service exposes it", name)
	}
	for _, f := range servicetest.ObservabilityFiles(t) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.HasSuffix(f, "alerts.yml") {
			requireRules(t, f, b)
		}
		if strings.HasSuffix(f, ".json") {
			var d struct {
				UID    string `json:"uid"`
				Panels []struct {
					Type    string `json:"type"`
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
			}
			require.NoError(t, json.Unmarshal(b, &d), f)
			require.NotEmpty(t, d.UID, f)
			for _, p := range d.Panels {
				if p.Type != "row" {
					require.NotEmpty(t, p.Targets, "%s: a panel with no query", f)
				}
				for _, q := range p.Targets {
					requireBalanced(t, f, q.Expr)
				}
			}
		}
	}
}

// requireRules checks that every alert rule has a name, an expression and a summary.
func requireRules(t *testing.T, file string, b []byte) {
	t.Helper()
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(b, &rules), file)
	require.NotEmpty(t, rules.Groups, file)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "%s: a rule of %s has no name", file, g.Name)
			require.NotEmpty(t, r.Annotations["summary"], "%s: %s has no summary", file, r.Alert)
			requireBalanced(t, file, r.Expr)
		}
	}
}

// requireBalanced checks that expr is not empty and its brackets pair up, the PromQL mistake a
// hand edit most often makes.
func requireBalanced(t *testing.T, file, expr string) {
	t.Helper()
	require.NotEmpty(t, strings.TrimSpace(expr), "%s: an empty expression", file)
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inString := false
	for _, r := range expr {
		switch {
		case r == '"':
			inString = !inString
		case inString:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			require.True(t, len(stack) > 0 && stack[len(stack)-1] == pairs[r], "%s: unbalanced %q in %s", file, r, expr)
			stack = stack[:len(stack)-1]
		}
	}
	require.Empty(t, stack, "%s: unclosed brackets in %s", file, expr)
}
