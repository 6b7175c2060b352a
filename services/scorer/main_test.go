package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/queue"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConfig is the configuration the environment's defaults give, on databaseURL.
func testConfig(databaseURL string) Config {
	var cfg Config
	if err := config.Defaults(&cfg); err != nil {
		panic(err)
	}
	cfg.Common, cfg.Workers = servicetest.Config(databaseURL), 2
	return cfg
}

func TestConfigLoadsThroughEnvconfig(t *testing.T) {
	t.Setenv("SCORER_DATABASE_URL", "postgres://db/x")
	var cfg Config
	require.NoError(t, config.Load(queue.Scorer.EnvPrefix(), &cfg, nil, io.Discard))
	p := scoring.DefaultParams()
	require.Equal(t, p.HordeAlpha, cfg.HordeAlpha)
	require.Equal(t, p.NonPeakPenalty, cfg.NonPeakPenalty)
	require.Equal(t, scoring.DefaultClassWeights, cfg.ClassWeights)
	require.Equal(t, "validator", cfg.PylonIdentity)
}

type testBundle struct {
	base string
	ins  *queue.Client
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dbURL := testdb.New(t)
	cfg := testConfig(dbURL)
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
	ins, err := queue.NewInserter(testdb.NewPoolFor(t, dbURL), queue.Scorer)
	require.NoError(t, err)
	return &testBundle{base: base, ins: ins}
}

// TestProbeFloodIsPushedBack floods POST /v1/probes towards a service that is not running, so
// nothing drains its probe queue: past the bound every request is refused with 429, Retry-After
// and a problem naming the queue, and the queue stops growing.
func TestProbeFloodIsPushedBack(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	cfg := testConfig(dbURL)
	cfg.MaxQueued = 50
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
	accepted, refused := 0, 0
	for refused < 20 {
		require.Less(t, accepted, 100000, "a flood was never refused")
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/probes", strings.NewReader(`{"target":"build-scheduler"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+servicetest.Token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusCreated:
			require.Zero(t, refused, "once full, the queue stays full: nothing works it")
			accepted++
		case http.StatusTooManyRequests:
			refused++
			require.Equal(t, "2", resp.Header.Get("Retry-After"))
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			var p struct{ Type, Queue, Detail string }
			require.NoError(t, json.Unmarshal(raw, &p), string(raw))
			require.Equal(t, "https://drover.dev/problems/busy", p.Type)
			require.Equal(t, queue.QueueProbe, p.Queue)
			require.Contains(t, p.Detail, "build-scheduler")
		default:
			t.Fatalf("status %d: %s", resp.StatusCode, raw)
		}
	}
	t.Logf("accepted %d probes, then refused %d", accepted, refused)
	require.GreaterOrEqual(t, accepted, cfg.MaxQueued)
	require.Less(t, accepted, 2*cfg.MaxQueued, "each admitted request counts until the next refresh, so the flood stops near the bound")

	var waiting int
	require.NoError(t, testdb.NewPoolFor(t, dbURL).QueryRow(t.Context(),
		`SELECT count(*) FROM build_scheduler.river_job WHERE queue = $1 AND state = 'available'`, queue.QueueProbe).Scan(&waiting))
	require.Equal(t, accepted, waiting, "the queue holds what was accepted, and nothing refused")
	require.InDelta(t, 20, servicetest.Value(t, servicetest.Metrics(t, base), "drover_http_refused_total",
		map[string]string{"service": "build-scheduler", "queue": queue.QueueProbe, "route": "/v1/probes"}), 0)
}

func TestRunServesScoresAndWeights(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	ctx := context.Background()
	servicetest.RequireRiverUIQueues(t, bundle.base, queue.QueueProbe, queue.QueueScoring)

	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, bundle.base+"/healthz", nil, nil))
	require.Equal(t, http.StatusNotFound, servicetest.Call(t, http.MethodGet, bundle.base+"/v1/weights", nil, nil))

	// Batch-runner's side of the contract: a score_batch job in scorer's queue.
	_, err := bundle.ins.Insert(ctx, queue.ScoreBatchArgs{
		BatchID: 7, StartedAt: time.Now(), Peak: true,
		Miners: []queue.MinerClassResult{
			{Hotkey: "5A", ExecutorClass: scoring.HordeClass, Executors: 1, Completed: 1},
			{Hotkey: "5B", ExecutorClass: scoring.HordeClass, Executors: 1, Failed: 1},
		},
	}, nil)
	require.NoError(t, err)

	var scores struct {
		BatchID int64 `json:"batch_id"`
		Miners  []struct {
			Hotkey    string  `json:"hotkey"`
			Weight    float64 `json:"weight"`
			WeightU16 int     `json:"weight_u16"`
			Classes   []struct {
				Raw float64 `json:"raw"`
			} `json:"classes"`
		} `json:"miners"`
	}
	require.Eventually(t, func() bool {
		return servicetest.Call(t, http.MethodGet, bundle.base+"/v1/batches/7/scores", nil, &scores) == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
	require.Len(t, scores.Miners, 2)
	require.Equal(t, "5A", scores.Miners[0].Hotkey)
	require.InDelta(t, 0.5, scores.Miners[0].Classes[0].Raw, 1e-12) // horde_score of one executor
	require.InDelta(t, 1.0, scores.Miners[0].Weight, 1e-12)

	var weights struct {
		BatchID  int64 `json:"batch_id"`
		TotalU16 int   `json:"total_u16"`
		Weights  []struct {
			Hotkey    string `json:"hotkey"`
			WeightU16 int    `json:"weight_u16"`
		} `json:"weights"`
	}
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, bundle.base+"/v1/weights", nil, &weights))
	require.Equal(t, int64(7), weights.BatchID)
	require.Equal(t, 65535, weights.TotalU16)
	require.Len(t, weights.Weights, 1, "a miner with weight 0 is not listed")
}

func TestBadTextIsRejected(t *testing.T) {
	t.Parallel()
	servicetest.RequireBadInputRejected(t, setup(t).base)
}

func TestRunRejectsBadRequests(t *testing.T) {
	t.Parallel()
	bundle := setup(t)

	var p struct{ Type, Field string }
	require.Equal(t, http.StatusBadRequest, servicetest.Call(t, http.MethodGet, bundle.base+"/v1/batches/x/scores", nil, &p))
	require.Equal(t, "id", p.Field)
	require.Equal(t, http.StatusNotFound, servicetest.Call(t, http.MethodGet, bundle.base+"/v1/batches/99/scores", nil, nil))
}

func TestRunRefusesBadScoringConfig(t *testing.T) {
	t.Parallel()

	for name, change := range map[string]func(*Config){
		"ClassWeights": func(c *Config) { c.ClassWeights = "a=x" },
		"Dancing":      func(c *Config) { c.DancingMultiplier = 0 },
		"PylonScheme":  func(c *Config) { c.PylonAddress = "ftp://pylon:8000" },
		"PylonNetuid":  func(c *Config) { c.PylonAddress, c.Netuid = "pylon:8000", 65536 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("postgres://unused")
			change(&cfg)
			require.Error(t, run(context.Background(), cfg, nil, io.Discard))
		})
	}
}

func TestMetricsOfTheWork(t *testing.T) {
	t.Parallel()
	start := time.Now() // before every event the age gauges below count from
	bundle := setup(t)
	ctx := context.Background()
	miners := []queue.MinerClassResult{{Hotkey: "5A", ExecutorClass: scoring.HordeClass, Executors: 1, Completed: 1}}
	_, err := bundle.ins.Insert(ctx, queue.ScoreBatchArgs{BatchID: 8, StartedAt: time.Now(), Peak: true, Miners: miners}, nil)
	require.NoError(t, err)
	// A scoring that fails: the same batch id with other inputs.
	require.Eventually(t, func() bool {
		return servicetest.Call(t, http.MethodGet, bundle.base+"/v1/batches/8/scores", nil, nil) == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
	miners[0].Completed, miners[0].Failed = 0, 1
	_, err = bundle.ins.Insert(ctx, queue.ScoreBatchArgs{BatchID: 8, StartedAt: time.Now(), Peak: true, Miners: miners}, nil)
	require.NoError(t, err)

	// The age of the last weights sent exists once weights were sent: the test that sends them
	// checks it (TestRunSetsWeightsDirectly).
	named := slices.DeleteFunc(servicetest.NamedMetrics(t, "drover_scorer_"), func(n string) bool { return n == weightsSentAge })
	servicetest.RequireMetrics(t, bundle.base, named...)
	require.Eventually(t, func() bool {
		m := servicetest.Metrics(t, bundle.base)
		river, _ := servicetest.Lookup(m, "drover_river_job_errors_total", map[string]string{"queue": queue.QueueScoring, "kind": "score_batch"})
		v, _ := servicetest.Lookup(m, "drover_scorer_batches_total", map[string]string{"outcome": "failed"})
		return river == 1 && v == 1
	}, 10*time.Second, 50*time.Millisecond)
	m := servicetest.Metrics(t, bundle.base)
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_scorer_batches_total", map[string]string{"outcome": "scored"}))
	age := servicetest.Value(t, m, "drover_scorer_latest_weights_age_seconds", nil)
	require.False(t, time.Now().Add(-time.Duration(age*float64(time.Second))).Before(start), "the latest weights are this test's")
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_river_job_errors_total", map[string]string{"queue": queue.QueueScoring, "kind": "score_batch"}))
}
