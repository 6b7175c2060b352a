package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// runCounts is what TestOverlappingRunsCountOnlyTheirOwnMakes reads of a run.
type runCounts struct {
	ID            int64
	State         string
	SuccessCount  int `json:"success_count"`
	Errors        int
	MadeElsewhere int `json:"made_elsewhere"`
	Skipped       int
	Dropped       int
	Total         int
}

// Two populate runs over the same keys, started together, count as DataJoint's two populate
// calls would: each its own makes. Their success counts sum to the keys made, each run's
// made_elsewhere holds the keys the other was making when it reached them, both make keys, and the key the function fails
// is an error of the one run whose make failed it, never of the other.
func TestOverlappingRunsCountOnlyTheirOwnMakes(t *testing.T) {
	t.Parallel()
	const keys, failing = 40, 13
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "AllMade", true: "OneKeyFails"}[fail], func(t *testing.T) {
			t.Parallel()
			dbURL := testdb.New(t)
			pool := testdb.NewPoolFor(t, dbURL)
			fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct{ Key struct{ K int } }
				_ = json.NewDecoder(r.Body).Decode(&req)
				time.Sleep(2 * time.Millisecond)
				if fail && req.Key.K == failing {
					http.Error(w, "no value for this key", http.StatusUnprocessableEntity)
					return
				}
				_ = json.NewEncoder(w).Encode(map[string]any{"rows": []map[string]int{{"v": 7}}})
			}))
			t.Cleanup(fn.Close)
			tables := httpTable(t, pool, "twice", fn.URL)
			_, err := pool.Exec(context.Background(), `INSERT INTO populate_worker.twice_src SELECT generate_series(1, $1::int)`, keys)
			require.NoError(t, err)
			cfg := Config{Common: servicetest.Config(dbURL), TablesFile: tables,
				Settings: wiring.Settings{MakeWorkers: 4, FeedOff: true, MinSchedulingInterval: time.Hour, ListenFlushEvery: time.Hour, ScheduleEvery: time.Hour}}
			base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
				return runTest(ctx, cfg, ln, stdout)
			})
			var runs [2]runCounts
			for i := range runs {
				require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/tables/twice/populate",
					map[string]any{"processes": 3, "reserve_jobs": true}, &runs[i]))
			}
			for i := range runs {
				require.Eventually(t, func() bool {
					servicetest.Call(t, http.MethodGet, base+"/v1/populate-runs/"+strconv.FormatInt(runs[i].ID, 10), nil, &runs[i])
					return runs[i].State != "running"
				}, 30*time.Second, 20*time.Millisecond)
			}
			require.Equal(t, keys, runs[0].Total, "the first run takes every key; the second those not reserved by then")
			t.Logf("runs: %+v", runs)
			var made int
			require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM populate_worker.twice_dst`).Scan(&made))
			if fail {
				// A failed run stops: a make of its already running when its entry was dropped
				// makes its key but counts in neither run.
				require.LessOrEqual(t, runs[0].SuccessCount+runs[1].SuccessCount, made, "no make counted twice: %+v", runs)
			} else {
				require.Equal(t, runs[0].SuccessCount+runs[1].SuccessCount, made, "each make counted once, in its own run: %+v", runs)
			}
			for _, r := range runs {
				require.Equal(t, r.Total, r.SuccessCount+r.Errors+r.MadeElsewhere+r.Skipped+r.Dropped, "every key accounted for: %+v", r)
			}
			if !fail {
				require.Equal(t, keys, made)
				for _, r := range runs {
					require.Equal(t, "done", r.State)
					require.Equal(t, r.Total, r.SuccessCount+r.MadeElsewhere, "made_elsewhere accounts for the rest: %+v", r)
					require.Positive(t, r.SuccessCount, "the runs split the keys; neither waits on the other's: %+v", runs)
				}
				return
			}
			require.Equal(t, 1, runs[0].Errors+runs[1].Errors, "the failed key is an error of one run only: %+v", runs)
			for _, r := range runs {
				if r.Errors == 0 {
					require.Equal(t, "done", r.State, "another run's failed key never fails this one: %+v", r)
				} else {
					require.Equal(t, "failed", r.State)
				}
			}
		})
	}
}
