package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeRuns serves run 12 of example_signal_stats as populate-worker would while it runs: each
// GET the next of runs (the last one again once they are spent); POST …/populate starts it, its
// body sent on posted when it is not nil.
func fakeRuns(t *testing.T, posted chan<- map[string]any, runs ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/tables/example_signal_stats/populate":
			if posted != nil {
				var body map[string]any
				_ = json.NewDecoder(r.Body).Decode(&body)
				posted <- body
			}
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"id":12,"table":"example_signal_stats","state":"running"}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/populate-runs/12":
			fmt.Fprint(w, runs[min(n, len(runs)-1)])
			n++
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runJSON is run 12 as GET /v1/populate-runs/12 answers it.
func runJSON(state string, total, made, errors, elsewhere, dropped int64, rate float64, eta string) string {
	remaining := total - made - errors - elsewhere - dropped
	if state != "running" {
		eta = "null"
	}
	return fmt.Sprintf(`{"id":12,"table":"example_signal_stats","state":%q,"total":%d,"made":%d,"success_count":%d,"errors":%d,`+
		`"made_elsewhere":%d,"skipped":0,"dropped":%d,"queued":4,"remaining":%d,"rate":%g,"eta_seconds":%s,`+
		`"options":{"reserve_jobs":true},"error_list":[]}`, state, total, made, made, errors, elsewhere, dropped, remaining, rate, eta)
}

// runApp is an app against srv as populate-worker that polls at once, printing to out, with a
// clock step on at each read.
func runApp(srv *httptest.Server, out *strings.Builder, step time.Duration, terminal bool) *app {
	cfg := config{urls: map[string]string{populateWorker: srv.URL}}
	t0 := time.Date(2026, 11, 28, 21, 55, 0, 0, time.UTC)
	reads := 0
	return &app{ctx: context.Background(), cfg: cfg, api: &client{cfg: cfg, http: srv.Client()}, out: printer{w: out},
		terminal: terminal, now: func() time.Time { reads++; return t0.Add(time.Duration(reads) * step) }}
}

// Following a run where its progress cannot be redrawn (a log, a pipe) prints a line as the run
// moves, at most one a second, each with the rate and the ETA, then the last one and a line that
// says how it ended.
func TestFollowRunPrintsALineASecond(t *testing.T) {
	t.Parallel()
	srv := fakeRuns(t, nil,
		runJSON("running", 200, 0, 0, 0, 0, 0, "null"),
		runJSON("running", 200, 20, 0, 0, 0, 40, "4.5"), // half a second on: not printed
		runJSON("running", 200, 60, 1, 0, 0, 40.7, "3.4"),
		runJSON("running", 200, 60, 1, 0, 0, 40.7, "3.4"), // unchanged
		runJSON("running", 200, 110, 3, 0, 0, 45.2, "1.9"),
		runJSON("running", 200, 150, 4, 0, 0, 44, "1"),
		runJSON("done", 200, 195, 5, 0, 0, 43.1, ""),
	)
	var out strings.Builder
	a := runApp(srv, &out, 500*time.Millisecond, false)
	err := a.followRun("12")
	require.Equal(t, exitUnsuccess, exitCodeOf(err), "a run with errors: %v", err)
	require.Equal(t, `run 12 running [------------------------------]   0% of 200 keys: made 0, 0 failed, 0 made elsewhere, 200 remaining; 0.0 keys/s, eta ?
run 12 running [#########---------------------]  30% of 200 keys: made 60, 1 failed, 0 made elsewhere, 139 remaining; 40.7 keys/s, eta 3s
run 12 running [################--------------]  56% of 200 keys: made 110, 3 failed, 0 made elsewhere, 87 remaining; 45.2 keys/s, eta 2s
run 12 done [#############################x] 100% of 200 keys: made 195, 5 failed, 0 made elsewhere, 0 remaining; 43.1 keys/s
populate run 12 of example_signal_stats: done; made 195, 5 failed, 0 made elsewhere
`, out.String())
}

// A run whose keys were all made elsewhere ends with an empty bar and a summary that says so; on
// a terminal the bar is one line redrawn in place.
func TestFollowRunMadeElsewhereOnATerminal(t *testing.T) {
	t.Parallel()
	srv := fakeRuns(t, nil,
		runJSON("running", 100, 0, 0, 40, 0, 0, "null"),
		runJSON("done", 100, 0, 0, 100, 0, 0, ""),
	)
	var out strings.Builder
	a := runApp(srv, &out, time.Second, true)
	require.NoError(t, a.followRun("12"))
	running := "run 12 running [------------------------------]   0% of 100 keys: made 0, 0 failed, 40 made elsewhere, 60 remaining; 0.0 keys/s, eta ?"
	done := "run 12 done [------------------------------]   0% of 100 keys: made 0, 0 failed, 100 made elsewhere, 0 remaining; 0.0 keys/s"
	require.Equal(t, "\r"+running+"\r"+done+strings.Repeat(" ", len(running)-len(done))+"\n"+ // the longer line wiped out
		"populate run 12 of example_signal_stats: done; made 0, 0 failed, 100 made elsewhere\n", out.String())

	// On a terminal 100 columns wide, the short form, as TestFitLine has it.
	srv = fakeRuns(t, nil,
		runJSON("running", 100, 0, 0, 40, 0, 0, "null"),
		runJSON("done", 100, 0, 0, 100, 0, 0, ""),
	)
	out.Reset()
	a = runApp(srv, &out, time.Second, true)
	a.width = func() int { return 100 }
	require.NoError(t, a.followRun("12"))
	running = "run 12 [-----------]   0% made 0, 0 failed, 40 elsewhere, 60 left of 100; 0.0/s, eta ?"
	done = "run 12 done [-----------]   0% made 0, 0 failed, 100 elsewhere, 0 left of 100; 0.0/s"
	require.Equal(t, "\r"+running+"\r"+done+strings.Repeat(" ", max(0, len(running)-len(done)))+"\n"+
		"populate run 12 of example_signal_stats: done; made 0, 0 failed, 100 made elsewhere\n", out.String())
}

// drover populate of a table with nothing to make says so plainly and exits 0.
func TestPopulateNothingToMake(t *testing.T) {
	t.Parallel()
	posted := make(chan map[string]any, 2)
	srv := fakeRuns(t, posted, `{"id":12,"table":"example_signal_stats","state":"done","total":0,"made":0,"errors":0,`+
		`"made_elsewhere":0,"skipped":0,"dropped":0,"remaining":0,"rate":0,"eta_seconds":null,"options":{"reserve_jobs":true}}`)
	code, out, errOut := droverAt(t, srv.URL, nil, "populate", "example_signal_stats")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "run 12 done [------------------------------]   0% of 0 keys: made 0, 0 failed, 0 made elsewhere, 0 remaining; 0.0 keys/s\n"+
		"populate run 12 of example_signal_stats: done; nothing to make: no scheduled key of example_signal_stats matched\n", out)
	require.NotContains(t, <-posted, "min_scheduling_interval", "the worker's own interval unless given")

	code, _, errOut = droverAt(t, srv.URL, nil, "populate", "example_signal_stats", "--min-scheduling-interval", "0")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, map[string]any{"restriction": map[string]any{}, "suppress_errors": false, "processes": float64(1),
		"min_scheduling_interval": float64(0)}, <-posted)
}

// exitCodeOf is the exit code err would give.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return exitUsage
}
