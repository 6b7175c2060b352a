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

	"drover.dev/queue"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// TestRiverMetricsOfEveryService sends a probe from a service to itself and reads what its
// /metrics says of the River jobs that carried it. It also checks that the service exposes every
// family the dashboards and alert rules name outside the services' own prefixes (River's, the
// gauge statements' failures, HTTP's).
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
	for _, prefix := range []string{"drover_river_", "drover_metrics_", "http_"} {
		servicetest.RequireMetrics(t, base, servicetest.NamedMetrics(t, prefix)...)
	}
}

// owners are the prefixes of the families the dashboards and alert rules may name, each checked
// against a running process by a test: River's, the gauge failures' and HTTP's here, each
// service's in its own main test.
var owners = []string{
	"drover_river_", "drover_metrics_", "http_", "drover_miner_sync_", "drover_batch_runner_", "drover_scorer_",
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
			}
		}
	}
}
