package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/services/build-scheduler/internal/builder"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConfig is a scheduler configuration with intervals short enough for tests.
func testConfig(dbURL string) Config {
	return Config{
		Common: servicetest.Config(dbURL), MaxJobsPerGroup: 100, MaxDepsPerJob: 10, MaxJobBytes: 4096,
		DefaultJobTimeout: time.Minute, MaxJobTimeout: time.Hour, MaxAttempts: 3,
		ReapInterval: 100 * time.Millisecond, WatchdogInterval: time.Hour, StallAfter: time.Hour, ReportWorkers: 4,
	}
}

func startScheduler(t *testing.T, cfg Config) string {
	t.Helper()
	return servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
}

func startWorker(t *testing.T, dbURL string, targets ...string) {
	t.Helper()
	cfg := builder.Config{Common: servicetest.Config(dbURL), Targets: targets, Slots: 2, Lease: time.Second, WatchdogInterval: time.Hour}
	servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return builder.Run(ctx, cfg, ln, stdout)
	})
}

func sh(name, script string, deps ...string) dag.JobSpec {
	return dag.JobSpec{Name: name, Target: "x86_64-linux", Command: []string{"sh", "-c", script}, DependsOn: deps}
}

// waitGroup polls the group until it is final and returns it.
func waitGroup(t *testing.T, base string, id int64) jobgraph.Group {
	t.Helper()
	var g jobgraph.Group
	require.Eventually(t, func() bool {
		g = jobgraph.Group{}
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d", base, id), nil, &g))
		return g.FinishedAt != nil
	}, 20*time.Second, 50*time.Millisecond)
	return g
}

func TestRunServesHealthAndProbes(t *testing.T) {
	t.Parallel()
	base := startScheduler(t, testConfig(testdb.New(t)))

	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/healthz", nil, nil))
	var probe struct{ ID int64 }
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/probes", map[string]string{"target": "build-scheduler"}, &probe))
	require.Positive(t, probe.ID)
}

func TestGroupRunsToCompletionOnAWorker(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := startScheduler(t, testConfig(dbURL))
	startWorker(t, dbURL, "x86_64-linux")

	sub := dag.Submission{Name: "demo", Jobs: []dag.JobSpec{
		sh("top", "echo top; echo core/top/1.0 > $DROVER_AS_BUILT_FILE"),
		sh("left", "echo left", "top"), sh("right", "echo right >&2", "top"),
		sh("bottom", "echo bottom", "left", "right"),
		sh("c1", "echo c1"), sh("c2", "false", "c1"), sh("c3", "echo never", "c2"),
	}}
	var created jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", sub, &created))
	g := waitGroup(t, base, created.ID)
	require.Equal(t, jobgraph.GroupFailed, g.State)
	require.Equal(t, map[string]int{"complete": 5, "job_failed": 1, "dependency_failed": 1}, g.Counts)

	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs?state=complete&limit=1", base, g.ID), nil, &jobs))
	require.Len(t, jobs.Items, 1)
	require.Equal(t, "top", jobs.Items[0].Name)
	require.Equal(t, "core/top/1.0", *jobs.Items[0].AsBuilt)

	resp, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/jobs/%d/log", base, jobs.Items[0].ID), nil)
	require.NoError(t, err)
	resp.Header.Set("Authorization", "Bearer "+servicetest.Token)
	res, err := http.DefaultClient.Do(resp)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, "=== attempt 1 ===\ntop\n", string(body))
}
