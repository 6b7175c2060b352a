package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/testdb"
)

// quietSetup is a populate-worker whose only schedule_jobs calls are the test's own: the one at
// start has run before it returns, upstream changes are gathered for an hour before they are
// enqueued, and makes run only in populate calls.
func quietSetup(t *testing.T) (*testBundle, []int64) {
	t.Helper()
	b := setup(t, Config{Examples: true, ExamplesSeed: true,
		Settings: wiring.Settings{MinSchedulingInterval: time.Hour, ListenFlushEvery: time.Hour, ScheduleEvery: time.Hour}})
	pool := testdb.NewPoolFor(t, b.dbURL)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(),
			`SELECT count(*) FROM populate_worker.scheduling_events WHERE kind = 'schedule'`).Scan(&n))
		return n == 3
	}, 20*time.Second, 20*time.Millisecond, "the schedule at start covers the three example tables")
	var seed struct {
		SignalIDs []int64 `json:"signal_ids"`
	}
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": 4}, &seed))
	require.Len(t, seed.SignalIDs, 4)
	return b, seed.SignalIDs
}

type problemBody struct {
	Field  string
	Detail string
}

func TestScheduleTakesARestriction(t *testing.T) {
	t.Parallel()
	b, ids := quietSetup(t)
	var res struct {
		Scheduled  int
		Suppressed bool
	}
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/schedule", map[string]any{
		"restriction": map[string]any{"signal_id": []int64{ids[0], ids[2]}}, "min_scheduling_interval": 0,
	}, &res))
	require.Equal(t, 2, res.Scheduled)
	var p progress
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/tables/example_signal_stats/progress", nil, &p))
	require.Equal(t, 2, p.Jobs["scheduled"], "only the restricted keys are scheduled")
	require.Equal(t, 4, p.Remaining)

	var bad problemBody
	require.Equal(t, http.StatusUnprocessableEntity, b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/schedule", map[string]any{
		"restriction": map[string]any{"signal_id": "one"}, "min_scheduling_interval": 0,
	}, &bad))
	require.Equal(t, "restriction.signal_id", bad.Field)
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/tables/example_signal_stats/progress", nil, &p))
	require.Equal(t, 2, p.Jobs["scheduled"], "a refused restriction schedules nothing")
}

func TestRestrictionValuesAreCheckedAgainstKeyTypes(t *testing.T) {
	t.Parallel()
	b, _ := quietSetup(t)
	for _, v := range []string{`"3"`, `1.5`, `true`, `9223372036854775808`, `[1, "2"]`} {
		for _, path := range []string{"populate", "schedule"} {
			var p problemBody
			status := b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/"+path,
				json.RawMessage(`{"restriction": {"signal_id": `+v+`}}`), &p)
			require.Equal(t, http.StatusUnprocessableEntity, status, "%s %s", path, v)
			require.Equal(t, "restriction.signal_id", p.Field, "%s %s", path, v)
		}
		var p problemBody
		q := "/v1/tables/example_signal_stats/progress?signal_id=" + url.QueryEscape(v)
		require.Equal(t, http.StatusUnprocessableEntity, b.call(t, http.MethodGet, q, nil, &p), v)
		require.Equal(t, "restriction.signal_id", p.Field)
	}
	var p problemBody
	require.Equal(t, http.StatusUnprocessableEntity, b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/populate",
		map[string]any{"processes": 0}, &p))
	require.Equal(t, "processes", p.Field)
	var pr progress
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/v1/tables/example_signal_stats/progress", nil, &pr))
	require.Equal(t, map[string]int{"scheduled": 0, "reserved": 0, "error": 0, "ignore": 0, "success": 0}, pr.Jobs, "nothing written")
}

func TestIgnoreAKeyWithNoJob(t *testing.T) {
	t.Parallel()
	b, ids := quietSetup(t)
	pool := testdb.NewPoolFor(t, b.dbURL)
	var hash string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT md5(jsonb_build_object('signal_id', $1::bigint)::text)`, ids[1]).Scan(&hash))
	var job struct {
		Status string
		Key    map[string]int64
	}
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/jobs/example_signal_stats/"+hash+"/ignore", nil, &job))
	require.Equal(t, "ignore", job.Status)
	require.Equal(t, map[string]int64{"signal_id": ids[1]}, job.Key)

	// By key, as DataJoint's jobs.ignore(key): no hash to compute.
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/ignore",
		map[string]any{"key": map[string]int64{"signal_id": ids[2]}}, &job))
	require.Equal(t, "ignore", job.Status)
	require.Equal(t, map[string]int64{"signal_id": ids[2]}, job.Key)
	for body, field := range map[string]string{`{}`: "key.signal_id", `{"key": {"signal_id": "x"}}`: "key.signal_id"} {
		var p problemBody
		require.Equal(t, http.StatusUnprocessableEntity, b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/ignore",
			json.RawMessage(body), &p), body)
		require.Equal(t, field, p.Field, body)
	}

	var res populateResult
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/tables/example_signal_stats/populate?wait=30",
		map[string]any{"min_scheduling_interval": 0}, &res))
	require.Equal(t, 2, res.SuccessCount, "populate leaves the ignored keys alone")
	require.Equal(t, http.StatusNotFound, b.call(t, http.MethodPost,
		fmt.Sprintf("/v1/jobs/example_signal_stats/%032d/ignore", 7), nil, nil), "a hash outside key_source")
}
