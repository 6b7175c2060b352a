package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runTest is run for a config built in code: what the test left at zero takes its default.
func runTest(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	return run(ctx, cfg.withDefaults(), ln, stdout)
}

// withDefaults fills every duration and FeedAhead that a config built in code left at zero from
// the envconfig default tags, the one place each default is written. The service itself gets its
// defaults from the environment (service.Main), where a zero is the operator's: Check refuses it,
// or, for MIN_SCHEDULING_INTERVAL, keeps it (schedule whatever the last event).
func (c Config) withDefaults() Config {
	var d Config
	if err := config.Defaults(&d); err != nil {
		panic(fmt.Sprintf("populate-worker Config: %v", err))
	}
	fillZeros(reflect.ValueOf(&c).Elem(), reflect.ValueOf(d))
	return c
}

// fillZeros sets every zero duration and FeedAhead of v, and of its wiring.Settings, to
// defaults'.
func fillZeros(v, defaults reflect.Value) {
	for i := range v.NumField() {
		f, field := v.Field(i), v.Type().Field(i)
		if field.Type == reflect.TypeFor[wiring.Settings]() {
			fillZeros(f, defaults.Field(i))
			continue
		}
		_, isDuration := f.Interface().(time.Duration)
		if f.IsZero() && (isDuration || field.Name == "FeedAhead") {
			f.Set(defaults.Field(i))
		}
	}
}

// testBundle is a running populate-worker on a fresh database.
type testBundle struct {
	base  string
	dbURL string
}

func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	b := &testBundle{dbURL: testdb.New(t)}
	cfg.Common = servicetest.Config(b.dbURL)
	if cfg.MakeWorkers == 0 { // a replica making only the keys of populate runs
		cfg.MakeWorkers, cfg.FeedOff = 2, true
	}
	b.base = servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return runTest(ctx, cfg, ln, stdout)
	})
	return b
}

func (b *testBundle) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	return servicetest.Call(t, method, b.base+path, body, out)
}

type progress struct {
	Total, Remaining int
	Jobs             map[string]int
}

// populateResult is what the tests read of a populate run.
type populateResult struct {
	ID           int64
	State        string
	SuccessCount int `json:"success_count"`
	Made         int
	Errors       int
	Remaining    int
	ErrorList    []struct {
		KeyHash      string `json:"key_hash"`
		Key          map[string]any
		ErrorMessage string `json:"error_message"`
	} `json:"error_list"`
}

func TestRunServesHealthAndProbes(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Settings: wiring.Settings{MakeWorkers: 1}})
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/healthz", nil, nil))
	servicetest.RequireRiverUIQueues(t, b.base, queue.QueueProbe, queue.QueuePopulateMaintenance, queue.QueuePopulate, queue.QueuePopulateFeed)
	var probe struct{ ID int64 }
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/probes", map[string]string{"target": "populate-worker"}, &probe))
	require.Positive(t, probe.ID)
	var doc struct{ Paths map[string]any }
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/openapi.json", nil, &doc))
	require.Contains(t, doc.Paths, "/v1/tables/{name}/populate")
	require.NotContains(t, doc.Paths, "/v1/examples/seed", "documented only when served")
}

func TestBadTextIsRejected(t *testing.T) {
	t.Parallel()
	// The test's token has the admin scope too, so that the corpus reaches the bodies of PUT
	// /v1/tables/{name}, whose check comes before them.
	b := setup(t, Config{Examples: true, ExamplesSeed: true, AdminTokens: []string{servicetest.Token}})
	// The progress query's names are the table's key columns, its values JSON.
	servicetest.RequireBadInputRejected(t, b.base,
		servicetest.BadRequest{Method: http.MethodGet, Path: "/v1/tables/example_signal_energy/progress?%00=1", Field: "query"},
		servicetest.BadRequest{Method: http.MethodGet, Path: "/v1/tables/example_signal_energy/progress?signal_id=%ff", Field: "signal_id"},
		servicetest.BadRequest{Method: http.MethodGet, Path: "/v1/tables/example_signal_energy/progress?signal_id=%22%5Cu0000%22", Field: "signal_id"},
	)
}

func TestExamplesPopulateOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Examples: true, ExamplesSeed: true, Settings: wiring.Settings{MinSchedulingInterval: time.Millisecond}})

	var tables struct{ Items []struct{ Name, Make string } }
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/tables", nil, &tables))
	require.Len(t, tables.Items, 3)
	var seed struct {
		SignalIDs []int64 `json:"signal_ids"`
		EmptyIDs  []int64 `json:"empty_ids"`
	}
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": 10, "empty": 2}, &seed))

	for table, want := range map[string]int{"example_signal_stats": 8, "example_signal_energy": 8} {
		var res populateResult
		require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/tables/"+table+"/populate?wait=30",
			map[string]any{"suppress_errors": true, "processes": 2}, &res))
		require.Equal(t, "done", res.State)
		// The feeder is off, so the run's River jobs make every key, while the upstream listener's
		// schedule_jobs run concurrently: a key they schedule again is settled, not counted.
		var p progress
		b.call(t, http.MethodGet, "/v1/tables/"+table+"/progress", nil, &p)
		require.Equal(t, progress{Total: 10, Remaining: 2, Jobs: p.Jobs}, p, table)
		require.Equal(t, 2, p.Jobs["error"], table)
		require.Equal(t, want, res.SuccessCount, "%s: each key counted once", table)
		require.Len(t, res.ErrorList, 2, table)
	}
	var p progress
	require.Eventually(t, func() bool {
		b.call(t, http.MethodPost, "/v1/tables/example_signal_grade/populate?wait=10", map[string]any{}, nil)
		b.call(t, http.MethodGet, "/v1/tables/example_signal_grade/progress", nil, &p)
		return p.Total == 8 && p.Remaining == 0
	}, 10*time.Second, 50*time.Millisecond, "the chain's second table follows the first: %+v", p)
	restricted := fmt.Sprintf("/v1/tables/example_signal_stats/progress?signal_id=%d", seed.EmptyIDs[0])
	b.call(t, http.MethodGet, restricted, nil, &p)
	require.Equal(t, progress{Total: 1, Remaining: 1, Jobs: p.Jobs}, p)
	require.Equal(t, 1, p.Jobs["error"])

	var runs struct {
		Items      []populateResult `json:"items"`
		NextCursor string           `json:"next_cursor"`
	}
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/populate-runs?table=example_signal_stats&state=done", nil, &runs))
	require.Len(t, runs.Items, 1, "the stats table's one run")
	require.Equal(t, 8, runs.Items[0].SuccessCount)
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/populate-runs?limit=1", nil, &runs))
	require.Len(t, runs.Items, 1)
	require.NotEmpty(t, runs.NextCursor, "more runs than one")
	newest := runs.Items[0].ID
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/populate-runs?cursor="+runs.NextCursor, nil, &runs))
	require.Less(t, runs.Items[0].ID, newest, "the next page holds older runs")
	require.Equal(t, http.StatusBadRequest, b.call(t, http.MethodGet, "/v1/populate-runs?state=sleeping", nil, nil))
}

func TestJobsAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Examples: true, ExamplesSeed: true, Settings: wiring.Settings{MinSchedulingInterval: time.Millisecond}})
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": 3, "empty": 3}, nil))
	var res populateResult
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/populate?wait=30", map[string]any{"suppress_errors": true}, &res))
	require.Len(t, res.ErrorList, 3)

	var page struct {
		Items []struct {
			KeyHash      string `json:"key_hash"`
			Status       string
			ErrorMessage string `json:"error_message"`
		}
		NextCursor string `json:"next_cursor"`
	}
	seen := map[string]bool{}
	path := "/v1/jobs?table=example_signal_stats&status=error&limit=2"
	for i := 0; i < 3 && path != ""; i++ {
		require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, path, nil, &page))
		for _, j := range page.Items {
			require.Equal(t, "error", j.Status)
			require.Contains(t, j.ErrorMessage, "ValueError: signal")
			seen[j.KeyHash] = true
		}
		path = ""
		if page.NextCursor != "" {
			path = "/v1/jobs?table=example_signal_stats&status=error&limit=2&cursor=" + page.NextCursor
		}
		page.NextCursor, page.Items = "", nil
	}
	require.Len(t, seen, 3, "pagination visits every job once")

	hash := res.ErrorList[0].KeyHash
	var job struct{ Status string }
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/jobs/example_signal_stats/"+hash+"/ignore", nil, &job))
	require.Equal(t, "ignore", job.Status)
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/jobs/example_signal_stats/"+hash+"/reschedule", nil, &job))
	require.Equal(t, "scheduled", job.Status)
	require.Equal(t, http.StatusConflict, b.call(t, http.MethodPost, "/v1/jobs/example_signal_stats/"+hash+"/reschedule", nil, nil))
	require.Equal(t, http.StatusNotFound, b.call(t, http.MethodPost, "/v1/jobs/example_signal_stats/"+fmt.Sprintf("%032d", 0)+"/ignore", nil, nil))
	require.Equal(t, http.StatusBadRequest, b.call(t, http.MethodPost, "/v1/jobs/example_signal_stats/zz/ignore", nil, nil))
	require.Equal(t, http.StatusBadRequest, b.call(t, http.MethodGet, "/v1/jobs?status=done", nil, nil))
}

func TestBadPopulateRequestsAreRejectedAndWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Examples: true, ExamplesSeed: true, Settings: wiring.Settings{MinSchedulingInterval: time.Millisecond}})
	// The periodic schedule runs once at start, at a moment of its own: wait for it, then take
	// the scheduling events as they stand. With the interval at a millisecond, any schedule_jobs
	// a bad request ran would move its table's event.
	pool := testdb.NewPoolFor(t, b.dbURL)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var done int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM populate_worker.river_job
			WHERE kind = 'populate_schedule' AND state = 'completed'`).Scan(&done))
		return done > 0
	}, 15*time.Second, 20*time.Millisecond, "the start-up schedule")
	events := func() string {
		var s string
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(string_agg(table_name || ' ' || kind || ' ' || last_at::text, ', '
			ORDER BY table_name, kind), '') FROM populate_worker.scheduling_events`).Scan(&s))
		return s
	}
	before := events()
	for _, tc := range []struct {
		table  string
		body   any
		status int
	}{
		{"nope", map[string]any{}, http.StatusNotFound},
		{"example_signal_stats", map[string]any{"restriction": map[string]any{"samples": 1}}, http.StatusUnprocessableEntity},
		{"example_signal_stats", map[string]any{"restriction": map[string]any{"signal_id": map[string]int{"gt": 1}}}, http.StatusUnprocessableEntity},
		{"example_signal_stats", map[string]any{"restriction": "signal_id > 0 OR true"}, http.StatusBadRequest},
		{"example_signal_stats", map[string]any{"order": "sideways"}, http.StatusUnprocessableEntity},
		{"example_signal_stats", map[string]any{"max_calls": -1}, http.StatusUnprocessableEntity},
		{"example_signal_stats", map[string]any{"where": "1=1"}, http.StatusBadRequest},
		{"example_signal_stats?wait=61", map[string]any{}, http.StatusUnprocessableEntity},
		{"example_signal_stats?wait=-1", map[string]any{}, http.StatusUnprocessableEntity},
		{"example_signal_stats?wait=soon", map[string]any{}, http.StatusBadRequest},
	} {
		path := "/v1/tables/" + tc.table + "/populate"
		if table, query, ok := strings.Cut(tc.table, "?"); ok {
			path = "/v1/tables/" + table + "/populate?" + query
		}
		require.Equal(t, tc.status, b.call(t, http.MethodPost, path, tc.body, nil), "%s %v", path, tc.body)
	}
	require.Equal(t, http.StatusNotFound, b.call(t, http.MethodGet, "/v1/populate-runs/999", nil, nil))
	require.Equal(t, http.StatusNotFound, b.call(t, http.MethodPost, "/v1/populate-runs/999/cancel", nil, nil))
	require.Equal(t, http.StatusBadRequest, b.call(t, http.MethodGet, "/v1/populate-runs/x", nil, nil))
	var p progress
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/tables/example_signal_stats/progress", nil, &p))
	require.Equal(t, map[string]int{"scheduled": 0, "reserved": 0, "error": 0, "ignore": 0, "success": 0}, p.Jobs)
	require.Equal(t, before, events(), "no scheduling happened")
}

func TestRiverWorkersFollowUpstreamEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Examples: true, ExamplesSeed: true,
		Settings: wiring.Settings{MakeWorkers: 2, MinSchedulingInterval: 200 * time.Millisecond, KeepSuccess: true}})
	var seed struct {
		EmptyIDs []int64 `json:"empty_ids"`
	}
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": 4, "empty": 1}, &seed))

	progressOf := func(table string) progress {
		var p progress
		require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/tables/"+table+"/progress", nil, &p))
		return p
	}
	require.Eventually(t, func() bool {
		g, s := progressOf("example_signal_grade"), progressOf("example_signal_stats")
		return g.Total == 3 && g.Remaining == 0 && s.Jobs["error"] == 1 && s.Jobs["success"] == 3
	}, 20*time.Second, 50*time.Millisecond, "inserts upstream schedule makes, with no populate call")

	// Deleting upstream rows (and, by cascade, target rows) cleans their jobs up.
	pool := testdb.NewPoolFor(t, b.dbURL)
	_, err := pool.Exec(context.Background(), `DELETE FROM populate_worker.example_signal`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s := progressOf("example_signal_stats")
		return s.Total == 0 && s.Jobs["error"] == 0 && s.Jobs["success"] == 0
	}, 20*time.Second, 50*time.Millisecond)
}

func TestErroredMakeIsAFailedRiverJob(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Examples: true, ExamplesSeed: true,
		Settings: wiring.Settings{MakeWorkers: 2, MinSchedulingInterval: 200 * time.Millisecond}})
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": 3, "empty": 1}, nil))
	require.Eventually(t, func() bool {
		var p progress
		require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/tables/example_signal_stats/progress", nil, &p))
		return p.Jobs["error"] == 1 && p.Total == 3 && p.Remaining == 1
	}, 20*time.Second, 50*time.Millisecond)

	var page struct {
		Items []struct {
			KeyHash      string `json:"key_hash"`
			ErrorMessage string `json:"error_message"`
		}
	}
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/jobs?table=example_signal_stats&status=error", nil, &page))
	require.Len(t, page.Items, 1)

	// River shows the make that raised as discarded with the same error, and the others completed.
	rows, err := testdb.NewPoolFor(t, b.dbURL).Query(context.Background(), `
		SELECT args->>'key_hash', state::text, coalesce(errors[1]->>'error', '') FROM populate_worker.river_job
		WHERE kind = 'populate_make' AND args->>'table' = 'example_signal_stats'`)
	require.NoError(t, err)
	states := map[string]int{}
	for rows.Next() {
		var hash, state, msg string
		require.NoError(t, rows.Scan(&hash, &state, &msg))
		states[state]++
		if state == "discarded" {
			require.Equal(t, page.Items[0].KeyHash, hash)
			require.Contains(t, msg, page.Items[0].ErrorMessage)
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int{"completed": 2, "discarded": 1}, states)
	requirePopulateMetrics(t, b.base)
}

// requirePopulateMetrics checks what /metrics says after TestErroredMakeIsAFailedRiverJob's
// makes, and that it exposes every family the dashboards and alert rules name.
func requirePopulateMetrics(t *testing.T, base string) {
	t.Helper()
	servicetest.RequireMetrics(t, base, servicetest.NamedMetrics(t, "drover_populate_worker_")...)
	m := servicetest.Metrics(t, base)
	stats := func(labels ...string) map[string]string {
		out := map[string]string{"table": "example_signal_stats"}
		for i := 0; i < len(labels); i += 2 {
			out[labels[i]] = labels[i+1]
		}
		return out
	}
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_populate_worker_makes_total", stats("outcome", "error")))
	require.Equal(t, 2.0, servicetest.Value(t, m, "drover_populate_worker_makes_total", stats("outcome", "success")))
	require.Equal(t, 3.0, servicetest.Value(t, m, "drover_populate_worker_make_duration_seconds", stats()))
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_populate_worker_jobs", stats("status", "error")))
	require.Equal(t, 0.0, servicetest.Value(t, m, "drover_populate_worker_jobs", stats("status", "scheduled")))
	require.Equal(t, 3.0, servicetest.Value(t, m, "drover_populate_worker_keys_total", stats("kind", "schedule")))
	require.Equal(t, 0.0, servicetest.Value(t, m, "drover_populate_worker_reservations_reclaimed_total", stats()))
}
