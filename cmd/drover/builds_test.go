package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// followGroupApp is an app whose build-scheduler is srv, printing to out.
func followGroupApp(t *testing.T, srv *httptest.Server, out *strings.Builder) *app {
	t.Helper()
	cfg := config{urls: map[string]string{buildScheduler: srv.URL}}
	return &app{ctx: context.Background(), cfg: cfg, api: &client{cfg: cfg, http: srv.Client()}, out: printer{w: out}}
}

// TestFollowedGroupThatFailsEndsWithItsFailures replays a group whose build fails: following it
// ends with the failed job, its exit code and error, how many jobs it kept from running, and
// the commands that show its output and retry the group; the exit code says the group failed.
func TestFollowedGroupThatFailsEndsWithItsFailures(t *testing.T) {
	t.Parallel()
	var gets atomic.Int32
	var listed atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/groups/2":
			if gets.Add(1) == 1 {
				fmt.Fprint(w, `{"id":2,"state":"dispatching","counts":{"complete":1,"running":1,"waiting_on_dependency":1}}`)
				return
			}
			fmt.Fprint(w, `{"id":2,"state":"failed","counts":{"complete":1,"job_failed":1,"dependency_failed":1}}`)
		case "/v1/groups/2/jobs":
			listed.Store(r.URL.RawQuery)
			fmt.Fprint(w, `{"items":[{"id":14,"name":"vet","target":"x86_64-linux","state":"job_failed","attempt":1,`+
				`"exit_code":1,"error":"exit status 1\n(after 2 attempts)"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	var out strings.Builder

	err := followGroupApp(t, srv, &out).followGroup("2")
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, exitUnsuccess, ee.code)
	require.EqualError(t, err, "group 2 failed")
	require.Equal(t, "limit=20&state=job_failed", listed.Load())
	require.Equal(t, `group 2 dispatching: complete=1 running=1 waiting_on_dependency=1
group 2 failed: complete=1 dependency_failed=1 job_failed=1

failed jobs:
ID  NAME  TARGET        ATTEMPT  EXIT  ERROR
14  vet   x86_64-linux  1        1     exit status 1 (after 2 attempts)
1 job not run: a job they depend on failed

their output:
  drover builds log 14   # vet
once fixed, run them and the jobs they held back again: drover builds retry 2
`, out.String())
}

// TestFollowedGroupThatFailsSaysWhatItCouldNotList: a failed group whose jobs the scheduler does
// not list still ends as failed (exit 7), saying why its failures are missing, and a group with
// more failed jobs than are shown says how to see the rest.
func TestFollowedGroupThatFailsSaysWhatItCouldNotList(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		jobs func(http.ResponseWriter)
		want []string
	}{
		"ListRefused": {
			jobs: func(w http.ResponseWriter) {
				http.Error(w, `{"detail":"down for a moment"}`, http.StatusInternalServerError)
			},
			want: []string{"its failed jobs could not be listed: build-scheduler listGroupJobs", "down for a moment"},
		},
		"MoreThanShown": {
			jobs: func(w http.ResponseWriter) {
				fmt.Fprint(w, `{"items":[{"id":14,"name":"vet","exit_code":2,"error":"exit status 2"}]}`)
			},
			want: []string{"and 29 more: drover builds show 2\n", "  drover builds log 14   # vet\n"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/v1/groups/2":
					fmt.Fprint(w, `{"id":2,"state":"failed","counts":{"job_failed":30}}`)
				case "/v1/groups/2/jobs":
					tt.jobs(w)
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			var out strings.Builder
			err := followGroupApp(t, srv, &out).followGroup("2")
			var ee *exitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, exitUnsuccess, ee.code)
			for _, want := range tt.want {
				require.Contains(t, out.String(), want)
			}
		})
	}
}

// TestFollowedGroupThatCompletesListsNoFailures: a group that completes ends with its counts
// alone, and asks for no failed jobs.
func TestFollowedGroupThatCompletesListsNoFailures(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/groups/3" {
			http.Error(w, "unexpected "+r.URL.Path, http.StatusTeapot)
			return
		}
		fmt.Fprint(w, `{"id":3,"state":"complete","counts":{"complete":4}}`)
	}))
	t.Cleanup(srv.Close)
	var out strings.Builder
	require.NoError(t, followGroupApp(t, srv, &out).followGroup("3"))
	require.Equal(t, "group 3 complete: complete=4\n", out.String())
}

// TestWithEnvSetsEveryJobsEnv: --env reaches every job, over the file's value of the same name
// and beside its others, and the rest of the group goes to the scheduler as written.
func TestWithEnvSetsEveryJobsEnv(t *testing.T) {
	t.Parallel()
	body := json.RawMessage(`{"name":"g","jobs":[
		{"name":"a","command":["true"],"priority":9223372036854775808},
		{"name":"b","command":["true"],"env":{"REPO":"/from/the/file","KEEP":"1"}}]}`)

	got, err := withEnv(body, []string{"REPO=/home/me/drover", "EMPTY=", "EQ=a=b"})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"g","jobs":[
		{"name":"a","command":["true"],"priority":9223372036854775808,"env":{"REPO":"/home/me/drover","EMPTY":"","EQ":"a=b"}},
		{"name":"b","command":["true"],"env":{"REPO":"/home/me/drover","KEEP":"1","EMPTY":"","EQ":"a=b"}}]}`, string(got))
	require.Contains(t, string(got), "9223372036854775808", "numbers keep their digits")

	same, err := withEnv(body, nil)
	require.NoError(t, err)
	require.Equal(t, string(body), string(same), "without --env the file goes as it is")

	for _, bad := range []string{"REPO", "=x"} {
		_, err := withEnv(body, []string{bad})
		require.ErrorContains(t, err, "must be NAME=VALUE", bad)
	}
}

// TestSubmitHelpGivesTheExampleGroup: submit's help names examples/group.yaml with the --env its
// jobs need, and the file reads as a group whose every job then has them.
func TestSubmitHelpGivesTheExampleGroup(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	require.Equal(t, exitOK, run(context.Background(), []string{"builds", "submit", "--help"}, &stdout, &stderr,
		func(string) string { return "" }))
	require.Contains(t, stdout.String(), `drover builds submit examples/group.yaml --env REPO="$PWD" --env HOME="$HOME" --follow`)

	body, err := readGroup("../../examples/group.yaml")
	require.NoError(t, err)
	body, err = withEnv(body, []string{"REPO=/r", "HOME=/h"})
	require.NoError(t, err)
	var group struct {
		Name string
		Jobs []struct {
			Name    string
			Command []string
			Env     map[string]string
		}
	}
	require.NoError(t, json.Unmarshal(body, &group))
	require.NotEmpty(t, group.Name)
	require.NotEmpty(t, group.Jobs)
	for _, j := range group.Jobs {
		require.Equal(t, map[string]string{"REPO": "/r", "HOME": "/h"}, j.Env, j.Name)
		require.Contains(t, strings.Join(j.Command, " "), "REPO", "job %s builds from the checkout --env names", j.Name)
	}
}
