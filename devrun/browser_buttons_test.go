package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/shared/apiclient"
)

// press is one River UI button an operator presses in the browser test: on job ID's page at URL,
// the button named Button, after which the page must show the job in State.
type press struct {
	Check  string `json:"check"`
	URL    string `json:"url"`
	ID     int64  `json:"id"`
	Button string `json:"button"`
	State  string `json:"state"`
}

// riverJob is a job as River UI's API lists it.
type riverJob struct {
	ID          int64    `json:"id"`
	Args        string   `json:"args"`
	State       string   `json:"state"`
	AttemptedBy []string `json:"attempted_by"`
}

// riverJobs lists up to 20 jobs of kind (any kind when empty) in state from the service's River
// UI API, newest first.
func riverJobs(t *testing.T, base, token, kind, state string) []riverJob {
	t.Helper()
	q := url.Values{"state": {state}, "limit": {"20"}}
	if kind != "" {
		q.Set("kinds", kind)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/riverui/api/jobs?"+q.Encode(), nil)
	require.NoError(t, err)
	req.SetBasicAuth(riverUIUser, token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list struct {
		Data []riverJob `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	return list.Data
}

// eventually polls cond every 200 ms until it holds, failing with what after a minute.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within a minute; last seen: %s", what, last)
}

// apiGet decodes GET base+path with the bearer token into out and returns the status code.
func apiGet(t *testing.T, token, u string, out any) int {
	t.Helper()
	status, err := (&apiclient.Client{Token: token}).Do(t.Context(), http.MethodGet, u, nil, out)
	if err != nil && status == 0 {
		require.NoError(t, err)
	}
	return status
}

// buildArgs are the args of a build_run River job: the build it runs.
type buildArgs struct {
	GroupID int64  `json:"group_id"`
	JobID   int64  `json:"job_id"`
	JobName string `json:"job_name"`
	Attempt int    `json:"attempt"`
}

// apiBuild is a build job as the scheduler's API shows it.
type apiBuild struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	State   string `json:"state"`
	Attempt int    `json:"attempt"`
}

// groupBuilds returns group id's jobs from the scheduler's API, by job id.
func groupBuilds(t *testing.T, base, token string, id int64) map[int64]apiBuild {
	t.Helper()
	var page struct{ Items []apiBuild }
	require.Equal(t, http.StatusOK, apiGet(t, token, fmt.Sprintf("%s/v1/groups/%d/jobs", base, id), &page))
	out := map[int64]apiBuild{}
	for _, j := range page.Items {
		out[j.ID] = j
	}
	return out
}

// demoBuildRows checks every build_run River job of the demo group (the group of its failed
// docs-build) against the scheduler's API: each names in its args the build it ran, that job,
// under that name, as the attempt the API shows, ended as River shows it. It returns a check of
// each row's page in River UI: its args naming the build.
func demoBuildRows(t *testing.T, f *fleet, opts options) []jobCheck {
	t.Helper()
	base := f.url("build-scheduler")
	var group int64
	rows := map[string][]riverJob{}
	for _, state := range []string{"completed", "discarded", "cancelled", "running", "available"} {
		rows[state] = riverJobs(t, base, opts.token, "build_run", state)
		for _, j := range rows[state] {
			var args buildArgs
			require.NoError(t, json.Unmarshal([]byte(j.Args), &args))
			if state == "discarded" && args.JobName == "docs-build" {
				group = args.GroupID
			}
		}
	}
	require.NotZero(t, group, "the demo's docs-build build_run is not discarded")
	jobs := groupBuilds(t, base, opts.token, group)
	want := map[string]string{"completed": "complete", "discarded": "job_failed"}
	var checks []jobCheck
	for state, list := range rows {
		for _, j := range list {
			var args buildArgs
			require.NoError(t, json.Unmarshal([]byte(j.Args), &args))
			if args.GroupID != group {
				continue
			}
			job, ok := jobs[args.JobID]
			require.True(t, ok, "River job %d names job %d, which group %d does not have", j.ID, args.JobID, group)
			require.Equal(t, job.Name, args.JobName, "River job %d names its build", j.ID)
			require.Equal(t, job.Attempt, args.Attempt, "River job %d names the attempt the API shows for %s", j.ID, job.Name)
			require.Equal(t, want[state], job.State, "River job %d is %s: the API shows %s %s", j.ID, state, job.Name, job.State)
			checks = append(checks, jobCheck{
				Check: fmt.Sprintf("the demo's %s row names its build", job.Name), ID: j.ID,
				Texts: []string{"build_run", "State\n" + strings.ToUpper(state[:1]) + state[1:], `"job_name"`, `"attempt"`, `"` + job.Name + `"`},
			})
		}
	}
	require.Len(t, checks, len(jobs)-1, "one River job per build of the demo group, which ran all but docs-publish")
	return checks
}

// buildRetry prepares the Retry of the demo's failed docs-build: its source file now exists, so
// the build succeeds when it runs again. It returns the press and a check of the outcome: the
// group completes, and the build ran again as attempt 2, which the API shows and a River job of
// its own names.
func buildRetry(t *testing.T, f *fleet, opts options) (press, func()) {
	t.Helper()
	base := f.url("build-scheduler")
	var failed *riverJob
	for _, j := range riverJobs(t, base, opts.token, "build_run", "discarded") {
		var args struct {
			JobName string `json:"job_name"`
		}
		require.NoError(t, json.Unmarshal([]byte(j.Args), &args))
		if args.JobName == "docs-build" {
			failed = &j
			break
		}
	}
	require.NotNil(t, failed, "the demo's docs-build build_run is not discarded")
	var args struct {
		GroupID int64 `json:"group_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(failed.Args), &args))
	require.NoError(t, os.WriteFile(docsSource(opts), []byte("# Demo docs\n"), 0o600))
	check := func() {
		eventually(t, fmt.Sprintf("group %d complete after Retry", args.GroupID), func() (bool, string) {
			var g struct {
				State  string         `json:"state"`
				Counts map[string]int `json:"counts"`
			}
			apiGet(t, opts.token, fmt.Sprintf("%s/v1/groups/%d", base, args.GroupID), &g)
			return g.State == "complete", fmt.Sprintf("%s %v", g.State, g.Counts)
		})
		var docs apiBuild
		for _, j := range groupBuilds(t, base, opts.token, args.GroupID) {
			if j.Name == "docs-build" {
				docs = j
			}
		}
		require.Equal(t, 2, docs.Attempt, "the API shows the Retry's run as attempt 2")
		var rerun *riverJob
		for _, j := range riverJobs(t, base, opts.token, "build_run", "completed") {
			var a buildArgs
			require.NoError(t, json.Unmarshal([]byte(j.Args), &a))
			if a.JobID == docs.ID && a.Attempt == 2 {
				rerun = &j
			}
		}
		require.NotNil(t, rerun, "River UI shows attempt 2 of docs-build completed, on a River job naming it")
	}
	return press{Check: "Retry on the failed docs-build", URL: base, ID: failed.ID, Button: "Retry", State: "Completed"}, check
}

// makeRetry prepares the Retry of an errored make: the signal it failed on gets samples
// upstream, so the make succeeds when it runs again. The check: the key is made (its job row is
// gone or says success, and the target row exists).
func makeRetry(t *testing.T, f *fleet, opts options) (press, func()) {
	t.Helper()
	base := f.url("populate-worker")
	errored := riverJobs(t, base, opts.token, "populate_make", "discarded")
	require.NotEmpty(t, errored, "no errored make after the demo")
	var args struct {
		Table   string `json:"table"`
		KeyHash string `json:"key_hash"`
	}
	require.NoError(t, json.Unmarshal([]byte(errored[0].Args), &args))
	jobURL := fmt.Sprintf("%s/v1/jobs/%s/%s", base, url.PathEscape(args.Table), url.PathEscape(args.KeyHash))
	var key struct {
		Status string         `json:"status"`
		Key    map[string]any `json:"key"`
	}
	require.Equal(t, http.StatusOK, apiGet(t, opts.token, jobURL, &key))
	require.Equal(t, "error", key.Status)
	signal, err := strconv.ParseInt(fmt.Sprint(key.Key["signal_id"]), 10, 64)
	require.NoError(t, err, "the errored key %v names no signal", key.Key)

	conn, err := pgx.Connect(t.Context(), opts.databaseURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	// The upstream row is the data team's own table: fixing it is what a user would do.
	_, err = conn.Exec(t.Context(), `UPDATE populate_worker.example_signal SET samples = '{0.5, 1.5, 2.5, 3.5}' WHERE signal_id = $1`, signal)
	require.NoError(t, err)
	target := pgx.Identifier{"populate_worker", args.Table}.Sanitize()
	check := func() {
		eventually(t, fmt.Sprintf("%s key %s made after Retry", args.Table, args.KeyHash), func() (bool, string) {
			var now struct {
				Status       string `json:"status"`
				ErrorMessage string `json:"error_message"`
			}
			// A made key's job row is gone (DataJoint's jobs table keeps only what is not done)
			// or says success; either way the target row must be there.
			code := apiGet(t, opts.token, jobURL, &now)
			var made bool
			require.NoError(t, conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM "+target+" WHERE signal_id = $1)", signal).Scan(&made))
			done := code == http.StatusNotFound || code == http.StatusOK && now.Status == "success"
			return made && done, fmt.Sprintf("HTTP %d %s %q, target row %v", code, now.Status, now.ErrorMessage, made)
		})
	}
	return press{Check: "Retry on an errored make", URL: base, ID: errored[0].ID, Button: "Retry", State: "Completed"}, check
}

// buildCancel starts a long build and returns the press of Cancel on its running River job,
// whose args name it. The check: the build's job and group end cancelled, at attempt 1.
func buildCancel(t *testing.T, f *fleet, opts options) (press, func()) {
	t.Helper()
	base := f.url("build-scheduler")
	api := &apiclient.Client{Token: opts.token}
	var g struct {
		ID int64 `json:"id"`
	}
	_, err := api.Do(t.Context(), http.MethodPost, base+"/v1/groups", map[string]any{
		"name": "cancel-me", "jobs": []map[string]any{{"name": "long", "target": "x86_64-linux", "command": []string{"sleep", "600"}}},
	}, &g)
	require.NoError(t, err)
	var running int64
	eventually(t, fmt.Sprintf("group %d's build running", g.ID), func() (bool, string) {
		for _, j := range riverJobs(t, base, opts.token, "build_run", "running") {
			var args buildArgs
			if json.Unmarshal([]byte(j.Args), &args) == nil && args.GroupID == g.ID {
				require.Equal(t, "long", args.JobName)
				require.Equal(t, 1, args.Attempt)
				running = j.ID
				return true, ""
			}
		}
		return false, "no running build_run of the group"
	})
	check := func() {
		eventually(t, fmt.Sprintf("group %d cancelled after Cancel", g.ID), func() (bool, string) {
			var got struct {
				State  string         `json:"state"`
				Counts map[string]int `json:"counts"`
			}
			apiGet(t, opts.token, fmt.Sprintf("%s/v1/groups/%d", base, g.ID), &got)
			return got.State == "canceled" && got.Counts["cancel_complete"] == 1, fmt.Sprintf("%s %v", got.State, got.Counts)
		})
		for _, j := range groupBuilds(t, base, opts.token, g.ID) {
			require.Equal(t, 1, j.Attempt, "the cancelled build stays at its attempt")
		}
	}
	return press{Check: "Cancel on a running build", URL: base, ID: running, Button: "Cancel", State: "Cancelled"}, check
}
