package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/computehorde/hotkey"
	"drover.dev/queue"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fleet fakes the simulated fleet's metagraph endpoint (external HTTP).
type fleet struct {
	mu     sync.Mutex
	status int
	body   []byte
	gate   chan struct{} // when not nil, answers wait until it is closed
}

func (f *fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	status, body, gate := f.status, f.body, f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (f *fleet) serve(t *testing.T, status int, miners ...map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"netuid": 12, "block": 9000, "miners": miners})
	require.NoError(t, err)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.body = status, body
}

func address(t *testing.T, b byte) string {
	t.Helper()
	var key hotkey.PublicKey
	key[0], key[31] = b, 0xa5
	addr, err := hotkey.EncodeSS58(key, hotkey.SubstrateFormat)
	require.NoError(t, err)
	return addr
}

func neuron(t *testing.T, uid int, validator bool) map[string]any {
	t.Helper()
	return map[string]any{"uid": uid, "hotkey": address(t, byte(uid+1)), "coldkey": address(t, 99), "ip": "127.0.0.1", "port": 9000 + uid, "stake": float64(uid) * 1000, "validator": validator}
}

// validator is a neuron as the chain lists a validator with no axon: ip 0.0.0.0, port 0.
func validator(t *testing.T, uid int) map[string]any {
	t.Helper()
	v := neuron(t, uid, true)
	v["ip"], v["port"] = "0.0.0.0", 0
	return v
}

type testBundle struct {
	base  string
	fleet *fleet
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	f := &fleet{status: http.StatusOK}
	f.serve(t, http.StatusOK, validator(t, 0), neuron(t, 1, false), neuron(t, 2, false), map[string]any{"uid": -5})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := testConfig(t, testdb.New(t), srv.URL+"/metagraph")
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
	return &testBundle{base: base, fleet: f}
}

type minerPage struct {
	Miners []struct {
		Hotkey  string `json:"hotkey"`
		UID     int    `json:"uid"`
		Active  bool   `json:"active"`
		Serving bool   `json:"serving"`
	} `json:"items"`
	NextCursor string `json:"next_cursor"`
}

func (b *testBundle) miners(t *testing.T, query string) minerPage {
	t.Helper()
	var page minerPage
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, b.base+"/v1/miners"+query, nil, &page))
	return page
}

type syncEvents struct {
	Events []struct {
		Outcome string  `json:"outcome"`
		Skipped int     `json:"skipped"`
		Error   *string `json:"error"`
	} `json:"items"`
}

func TestRunSyncsAtStartAndServesMiners(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	servicetest.RequireRiverUIQueues(t, bundle.base, queue.QueueProbe, queue.QueueMetagraph)

	require.Eventually(t, func() bool { return len(bundle.miners(t, "").Miners) == 3 }, 10*time.Second, 20*time.Millisecond)
	require.Len(t, bundle.miners(t, "?validator=true").Miners, 1)
	notServing := bundle.miners(t, "?serving=false").Miners
	require.Len(t, notServing, 1, "the validator with no axon is kept, not skipped")
	require.Equal(t, 0, notServing[0].UID)
	require.False(t, notServing[0].Serving)
	require.Len(t, bundle.miners(t, "?serving=true").Miners, 2)
	require.Len(t, bundle.miners(t, "?validator=false&active=true").Miners, 2)
	require.Equal(t, 1, bundle.miners(t, "?hotkey="+address(t, 2)).Miners[0].UID)

	// Pages of two by (uid, hotkey).
	first := bundle.miners(t, "?limit=2")
	require.Equal(t, []int{0, 1}, []int{first.Miners[0].UID, first.Miners[1].UID})
	require.NotEmpty(t, first.NextCursor)
	second := bundle.miners(t, "?limit=2&cursor="+first.NextCursor)
	require.Len(t, second.Miners, 1)
	require.Equal(t, 2, second.Miners[0].UID)
	require.Empty(t, second.NextCursor)

	var events syncEvents
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, bundle.base+"/v1/sync/events", nil, &events))
	require.Equal(t, "partial", events.Events[0].Outcome)
	require.Equal(t, 1, events.Events[0].Skipped, "uid -5 is reported")

	var p struct{ Field string }
	for _, q := range []string{"?active=maybe", "?serving=1x", "?limit=0", "?cursor=%21"} {
		require.Equal(t, http.StatusBadRequest, servicetest.Call(t, http.MethodGet, bundle.base+"/v1/miners"+q, nil, &p), q)
	}
	require.Equal(t, "cursor", p.Field)
}

func TestBadTextIsRejected(t *testing.T) {
	t.Parallel()
	servicetest.RequireBadInputRejected(t, setup(t).base)
}

func TestRunSyncOnDemand(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	require.Eventually(t, func() bool { return len(bundle.miners(t, "?active=true").Miners) == 3 }, 10*time.Second, 20*time.Millisecond)

	// Miner 2 deregisters. The fleet holds its answer, so the sync stays running and a second
	// request finds it queued.
	gate := make(chan struct{})
	bundle.fleet.serve(t, http.StatusOK, validator(t, 0), neuron(t, 1, false))
	bundle.fleet.mu.Lock()
	bundle.fleet.gate = gate
	bundle.fleet.mu.Unlock()

	type answer struct {
		JobID         int64 `json:"job_id"`
		AlreadyQueued bool  `json:"already_queued"`
	}
	var a1, a2 answer
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, bundle.base+"/v1/sync", nil, &a1))
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodPost, bundle.base+"/v1/sync", nil, &a2))
	require.True(t, a2.AlreadyQueued)
	require.Equal(t, a1.JobID, a2.JobID)
	close(gate)

	require.Eventually(t, func() bool { return len(bundle.miners(t, "?active=false").Miners) == 1 }, 10*time.Second, 20*time.Millisecond)

	// The fleet goes down: the sync fails with an event and the list stays.
	bundle.fleet.serve(t, http.StatusServiceUnavailable)
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, bundle.base+"/v1/sync", nil, nil))
	var events syncEvents
	require.Eventually(t, func() bool {
		servicetest.Call(t, http.MethodGet, bundle.base+"/v1/sync/events?limit=1", nil, &events)
		return len(events.Events) == 1 && events.Events[0].Outcome == "failed"
	}, 10*time.Second, 20*time.Millisecond)
	require.Contains(t, *events.Events[0].Error, "status 503")
	require.Len(t, bundle.miners(t, "?active=true").Miners, 2)
}

func TestMetricsOfTheWork(t *testing.T) {
	t.Parallel()
	start := time.Now() // before every event the age gauges below count from
	bundle := setup(t)
	require.Eventually(t, func() bool { return len(bundle.miners(t, "").Miners) == 3 }, 10*time.Second, 20*time.Millisecond)

	servicetest.RequireMetrics(t, bundle.base, servicetest.NamedMetrics(t, "drover_miner_sync_")...)
	servicetest.RequireMetrics(t, bundle.base, "drover_miner_sync_miners", "drover_miner_sync_syncs_total",
		"drover_miner_sync_last_good_sync_age_seconds", "drover_miner_sync_last_sync_block")
	m := servicetest.Metrics(t, bundle.base)
	require.Equal(t, 2.0, servicetest.Value(t, m, "drover_miner_sync_miners", map[string]string{"state": "serving"}))
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_miner_sync_miners", map[string]string{"state": "validator"}))
	require.Equal(t, 0.0, servicetest.Value(t, m, "drover_miner_sync_miners", map[string]string{"state": "inactive"}))
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_miner_sync_syncs_total", map[string]string{"outcome": "partial"}))
	age := servicetest.Value(t, m, "drover_miner_sync_last_good_sync_age_seconds", nil)
	require.False(t, time.Now().Add(-time.Duration(age*float64(time.Second))).Before(start), "the last good sync is this test's")
}

// testConfig is the configuration the environment gives by default, on the test database dbURL,
// syncing from metagraphURL once (at start) within the test's life.
func testConfig(t *testing.T, dbURL, metagraphURL string) Config {
	t.Helper()
	var cfg Config
	require.NoError(t, config.Defaults(&cfg))
	cfg.Common = servicetest.Config(dbURL)
	cfg.MetagraphURL, cfg.SyncInterval, cfg.SourceTimeout = metagraphURL, time.Hour, 5*time.Second
	return cfg
}

func TestConfigLoadsThroughEnvconfig(t *testing.T) {
	t.Setenv("MINER_SYNC_DATABASE_URL", "postgres://db/x")
	var cfg Config
	require.NoError(t, config.Load(queue.MinerSync.EnvPrefix(), &cfg, nil, io.Discard))
	require.Equal(t, time.Minute, cfg.SyncInterval)
	require.Equal(t, int64(4<<20), cfg.SourceMaxBytes)
	require.Equal(t, 4096, cfg.SourceMaxEntries)
}
