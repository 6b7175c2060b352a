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
	"time"

	"github.com/stretchr/testify/require"
)

// poll is what a fake batch-runner answers for one poll of followBatch: the batch's row in the
// list and its live record (GET /v1/batches/current), none between phases or once it ended.
type poll struct {
	state   string
	miners  int
	current string
}

// fakeRunner serves polls in turn, one per list request, as batch-runner would while a batch
// runs, then the batch as stored; every other path is a 404.
func fakeRunner(t *testing.T, polls []poll, stored string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/batches":
			p := polls[min(n, len(polls)-1)]
			n++
			fmt.Fprintf(w, `{"items":[{"id":7,"state":%q,"miners":%d,"counts":{"completed":130,"excused":3,"failed":14}}]}`, p.state, p.miners)
		case "/v1/batches/current":
			if p := polls[max(0, min(n, len(polls))-1)]; p.current != "" {
				fmt.Fprint(w, p.current)
				return
			}
			http.NotFound(w, r)
		case "/v1/batches/7":
			fmt.Fprint(w, stored)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// followApp is an app against srv as batch-runner that polls at once, with a clock a second on
// at each read: each running stage's grown counts are printed as they come.
func followApp(srv *httptest.Server) *app {
	cfg := config{urls: map[string]string{batchRunner: srv.URL}}
	t0 := time.Date(2026, 11, 28, 21, 55, 0, 0, time.UTC)
	reads := 0
	return &app{ctx: context.Background(), cfg: cfg, api: &client{cfg: cfg, http: srv.Client()},
		now: func() time.Time { reads++; return t0.Add(time.Duration(reads) * time.Second) }}
}

// TestFollowBatchPrintsEveryStage replays a batch as batch-runner serves it, from its row before
// phase 1 has read the miners to its end between two polls, and checks that drover prints what
// make run's batch demo does: the batch once its miners are known, each stage as it starts, its
// counts as they grow and its end with its counts and how long it took, the hot phase's release,
// and the ends no poll saw (the hot phase's and the receipts') from the batch as stored.
func TestFollowBatchPrintsEveryStage(t *testing.T) {
	t.Parallel()
	const (
		manifests = `{"name":"manifests","started_at":"2026-11-28T21:55:01Z"`
		ended     = `,"finished_at":"2026-11-28T21:55:06Z","counts":{"miners":50,"received":49,"failed":1}}`
		generate  = `,{"name":"generate","started_at":"2026-11-28T21:55:06Z","finished_at":"2026-11-28T21:55:06.0003Z","counts":{"executors":147}}`
		avail     = `,{"name":"availability","started_at":"2026-11-28T21:55:06.0003Z"`
		availEnd  = `,"finished_at":"2026-11-28T21:55:07.0003Z","counts":{"accepted":141,"declined":6,"ready":141}}`
		hot       = `,{"name":"hot","started_at":"2026-11-28T21:55:07.0003Z"}`
		released  = `"hot":{"jobs":141,"released_at":"2026-11-28T21:55:07.0005Z","sent":141,"send_spread_us":500`
	)
	polls := []poll{
		{state: "running"}, // the row before phase 1 has recorded the plan
		{state: "running", miners: 50, current: `{"job_id":12,"batch_id":7,"miners":50,"stages":[` + manifests + `}]}`},
		{state: "running", miners: 50, current: `{"job_id":12,"miners":50,"manifests":{"received":49},"stages":[` + manifests + `}]}`},
		{state: "running", miners: 50, current: `{"job_id":12,"miners":50,"executors":147,"stages":[` +
			manifests + ended + generate + avail + `}]}`},
		{state: "running", miners: 50, current: `{"job_id":12,"miners":50,"executors":147,` + released + `},"stages":[` +
			manifests + ended + generate + avail + availEnd + hot + `]}`},
		{state: "running", miners: 50, current: `{"job_id":12,"miners":50,"executors":147,` + released + `,"finished":133,"failed":3},"stages":[` +
			manifests + ended + generate + avail + availEnd + hot + `]}`},
		{state: "done", miners: 50},
	}
	stored := `{"id":7,"state":"done","send_spread_us":500,"stages":[` + manifests + ended + generate + avail + availEnd +
		`,{"name":"hot","started_at":"2026-11-28T21:55:07.0003Z","finished_at":"2026-11-28T21:55:14.0103Z","counts":{"jobs":141,"sent":141,"finished":133,"failed":3}}` +
		`,{"name":"receipts","started_at":"2026-11-28T21:55:14.0103Z","finished_at":"2026-11-28T21:55:14.0383Z"}]}`
	a := followApp(fakeRunner(t, polls, stored))
	var out strings.Builder
	id, err := a.followBatch(12, &out)
	require.NoError(t, err)
	require.Equal(t, int64(7), id)
	require.Equal(t, `batch 7 running: 50 miners to test
  manifests     asking 50 miners for their executors
  manifests     49/50 miners so far
  manifests     49/50 miners (1 without a manifest) in 5.00 s
  jobs          147 executors to test, a job each, in 0.3 ms
  availability  offering 147 jobs, staggered by executor class spin-up
  availability  141 accepted, 6 declined; 141 ready in 1.00 s
  hot phase     sent 141 jobs in one release, spread 0.5 ms
  hot phase     136/141 answered (133 finished, 3 failed) so far
  hot phase     133 finished, 3 failed, 5 no answer in 7.01 s
  receipts      done in 28 ms
batch 7 done: jobs completed=130 excused=3 failed=14
`, out.String())
}

// TestRunBatchNoFollowNamesTheBatch runs drover batches run --no-follow against a batch-runner
// that answers a new batch, then one already running: the JSON is batch-runner's, batch id
// included, and the table names the batch first.
func TestRunBatchNoFollowNamesTheBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, answer, table string
	}{
		{"New", `{"job_id":13,"batch_id":4,"duplicate":false}`, "batch:                       4\nrun_batch job:               13\nalready waiting or running:  false\n"},
		{"Duplicate", `{"job_id":12,"batch_id":3,"duplicate":true}`, "batch:                       3\nrun_batch job:               12\nalready waiting or running:  true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/batches" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(http.StatusAccepted)
				fmt.Fprint(w, tc.answer)
			}))
			t.Cleanup(srv.Close)
			file := filepath.Join(t.TempDir(), "config.yaml") // not the user's own
			require.NoError(t, os.WriteFile(file, []byte("token: t\n"), 0o600))
			env := map[string]string{"DROVER_BATCH_RUNNER_URL": srv.URL, "DROVER_CONFIG": file}
			drover := func(args ...string) string {
				var stdout, stderr strings.Builder
				code := run(context.Background(), args, &stdout, &stderr, func(k string) string { return env[k] })
				require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
				return stdout.String()
			}

			var got, want map[string]any
			require.NoError(t, json.Unmarshal([]byte(drover("batches", "run", "--no-follow", "-o", "json")), &got))
			require.NoError(t, json.Unmarshal([]byte(tc.answer), &want))
			require.Equal(t, want, got)
			require.Equal(t, tc.table, drover("batches", "run", "--no-follow"))
		})
	}
}
