package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/apiclient"
)

// fleetProcess is a River client process as GET /v1/processes lists it.
type fleetProcess struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	State string `json:"state"`
}

// processes lists the River client processes of the service at base.
func processes(t *testing.T, token, base string) []fleetProcess {
	t.Helper()
	var page struct {
		Items []fleetProcess `json:"items"`
	}
	require.Equal(t, http.StatusOK, apiGet(t, token, base+"/v1/processes", &page))
	return page.Items
}

// processOf returns the River client id of the process pid among the service's processes.
func processOf(t *testing.T, token, base string, pid int) string {
	t.Helper()
	for _, p := range processes(t, token, base) {
		if p.PID == pid {
			return p.ID
		}
	}
	t.Fatalf("no process %d among %s's processes: %v", pid, base, processes(t, token, base))
	return ""
}

// testKilledReplicas SIGKILLs three processes of make run's fleet: the build worker while it runs
// a build, batch-runner while it runs a batch (in its manifests stage, which the fleet's silent
// miner holds for 5 s), and populate-worker. devrun restarts them, as a process manager would,
// and 60 s after the kill River UI shows none of the dead processes' jobs running: the liveness
// sweep gave them back, naming the dead process. drover status lists the processes of every
// service first.
func testKilledReplicas(t *testing.T, b *droverBundle) {
	t.Helper()
	f, token := b.fleet, b.opts.token
	status := b.ok(t, "status")
	require.Regexp(t, `build-scheduler \(build-worker\) +\S+ +\S+ +\d+ +live`, status)
	require.Regexp(t, `populate-worker +\S+ +\S+ +\d+ +live`, status)

	scheduler, populate, batches := f.url("build-scheduler"), f.url("populate-worker"), f.url("batch-runner")
	worker := f.extraNamed("build-worker")
	require.NotNil(t, worker, "the build demo's worker runs")
	var g struct {
		ID int64 `json:"id"`
	}
	_, err := (&apiclient.Client{Token: token}).Do(t.Context(), http.MethodPost, scheduler+"/v1/groups", map[string]any{
		"name": "killed-worker", "jobs": []map[string]any{{"name": "long", "target": "x86_64-linux", "command": []string{"sleep", "600"}}},
	}, &g)
	require.NoError(t, err)
	defer func() {
		_, _ = (&apiclient.Client{Token: token}).Do(t.Context(), http.MethodPost, fmt.Sprintf("%s/v1/groups/%d/cancel", scheduler, g.ID), nil, nil)
	}()
	var build riverJob
	eventually(t, fmt.Sprintf("group %d's build running", g.ID), func() (bool, string) {
		for _, j := range riverJobs(t, scheduler, token, "build_run", "running") {
			var args struct {
				GroupID int64 `json:"group_id"`
			}
			if json.Unmarshal([]byte(j.Args), &args) == nil && args.GroupID == g.ID {
				build = j
				return true, ""
			}
		}
		return false, "no running build_run of the group"
	})
	var run struct {
		JobID int64 `json:"job_id"`
	}
	_, err = (&apiclient.Client{Token: token}).Do(t.Context(), http.MethodPost, batches+"/v1/batches", nil, &run)
	require.NoError(t, err)
	var batch riverJob
	eventually(t, fmt.Sprintf("run_batch job %d running", run.JobID), func() (bool, string) {
		for _, j := range riverJobs(t, batches, token, "run_batch", "running") {
			if j.ID == run.JobID {
				batch = j
				return true, ""
			}
		}
		return false, "not running"
	})
	dead := map[string]string{
		scheduler: processOf(t, token, scheduler, f.pid(worker)),
		populate:  processOf(t, token, populate, f.pid(f.serviceNamed("populate-worker"))),
		batches:   processOf(t, token, batches, f.pid(f.serviceNamed("batch-runner"))),
	}
	require.Equal(t, dead[scheduler], build.AttemptedBy[len(build.AttemptedBy)-1], "the worker runs the build")
	require.Equal(t, dead[batches], batch.AttemptedBy[len(batch.AttemptedBy)-1], "batch-runner runs the batch")

	require.NoError(t, f.kill(worker))
	require.NoError(t, f.kill(f.serviceNamed("populate-worker")))
	require.NoError(t, f.kill(f.serviceNamed("batch-runner")))
	killed := time.Now()
	t.Logf("killed %v", dead)
	eventually(t, "the killed processes restarted", func() (bool, string) {
		return apiclient.Answers(t.Context(), populate+"/readyz") && apiclient.Answers(t.Context(), batches+"/readyz") &&
			apiclient.Answers(t.Context(), "http://"+buildWorkerAddr+"/readyz"), "not ready"
	})
	// What River UI shows a minute after the kill, the figure an operator looks at.
	time.Sleep(time.Until(killed.Add(60 * time.Second)))
	for base, id := range dead {
		for _, j := range riverJobs(t, base, token, "", "running") {
			require.NotEqual(t, id, j.AttemptedBy[len(j.AttemptedBy)-1], "%s: River UI shows job %d (%s) of the dead process %s running a minute after the kill", base, j.ID, j.Args, id)
		}
		require.False(t, slices.ContainsFunc(processes(t, token, base), func(p fleetProcess) bool { return p.ID == id }),
			"%s: the dead process %s is swept", base, id)
	}
	var rescued struct {
		Errors []struct {
			Error string `json:"error"`
		} `json:"errors"`
	}
	for base, id := range map[string]int64{scheduler: build.ID, batches: batch.ID} {
		require.Equal(t, http.StatusOK, riverUIGet(t, base, token, fmt.Sprintf("/riverui/api/jobs/%d", id), &rescued))
		require.NotEmpty(t, rescued.Errors, "%s job %d", base, id)
		require.Contains(t, rescued.Errors[0].Error, "rescued from process "+dead[base])
		if base == scheduler {
			require.Contains(t, rescued.Errors[0].Error, "attempt 2 replaces it as River job", "the dead build's River job names the attempt that replaced it")
		}
	}
}

// riverUIGet decodes GET base+path from River UI's API, logged in as the fleet's user, into out.
func riverUIGet(t *testing.T, base, token, path string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	require.NoError(t, err)
	req.SetBasicAuth(riverUIUser, token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}
