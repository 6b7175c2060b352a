package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
	"drover.dev/computehorde/subtensor/subtensortest"
	"drover.dev/queue"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// fakePylon fakes Pylon (external HTTP): two registered hotkeys, weights recorded.
type fakePylon struct {
	mu   sync.Mutex
	puts []map[string]float64
}

func (p *fakePylon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v1/subnet/12/block/latest/neurons":
		_, _ = w.Write([]byte(`{"block":{"number":4000,"hash":"0x` + "00000000000000000000000000000000000000000000000000000000000000ff" + `"},` +
			`"neurons":{"5A":{"uid":0,"hotkey":"5A"},"5B":{"uid":1,"hotkey":"5B"}}}`))
	case "/api/v1/identity/validator/subnet/12/weights":
		var body struct {
			Weights map[string]float64 `json:"weights"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body)
		p.mu.Lock()
		p.puts = append(p.puts, body.Weights)
		p.mu.Unlock()
		_, _ = w.Write([]byte(`{"detail":"weights update scheduled"}`))
	default:
		http.NotFound(w, r)
	}
}

// TestRunSetsWeightsThroughPylon scores a batch and expects its weights at Pylon, and the
// attempt listed.
func TestRunSetsWeightsThroughPylon(t *testing.T) {
	t.Parallel()
	start := time.Now() // before every event the age gauges below count from
	fake := &fakePylon{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	dbURL := testdb.New(t)
	cfg := testConfig(dbURL)
	cfg.PylonAddress, cfg.Netuid, cfg.WeightsRateLimit = srv.URL, 12, 100
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
	ins, err := queue.NewInserter(testdb.NewPoolFor(t, dbURL), queue.Scorer)
	require.NoError(t, err)
	_, err = ins.Insert(context.Background(), queue.ScoreBatchArgs{
		BatchID: 3, StartedAt: time.Now(), Peak: true,
		Miners: []queue.MinerClassResult{{Hotkey: "5A", ExecutorClass: scoring.HordeClass, Executors: 1, Completed: 1}},
	}, nil)
	require.NoError(t, err)

	var page struct {
		Items []struct {
			Outcome string `json:"outcome"`
			Block   int64  `json:"block"`
			Reason  string `json:"reason"`
		} `json:"items"`
	}
	require.Eventually(t, func() bool {
		servicetest.Call(t, http.MethodGet, base+"/v1/weights/submissions?limit=5", nil, &page)
		return len(page.Items) > 0
	}, 15*time.Second, 50*time.Millisecond)
	require.Equal(t, "sent", page.Items[0].Outcome)
	require.Equal(t, int64(4000), page.Items[0].Block)
	fake.mu.Lock()
	require.Equal(t, []map[string]float64{{"5A": 1}}, fake.puts)
	fake.mu.Unlock()
	m := servicetest.Metrics(t, base)
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_scorer_weight_submissions_total", map[string]string{"outcome": "sent"}))
	age := servicetest.Value(t, m, "drover_scorer_weights_sent_age_seconds", nil)
	require.False(t, time.Now().Add(-time.Duration(age*float64(time.Second))).Before(start), "the weights sent are this test's")

	var p struct{ Field string }
	require.Equal(t, http.StatusBadRequest, servicetest.Call(t, http.MethodGet, base+"/v1/weights/submissions?limit=0", nil, &p))
	require.Equal(t, "limit", p.Field)
	require.Equal(t, http.StatusBadRequest, servicetest.Call(t, http.MethodGet, base+"/v1/weights/submissions?cursor=x", nil, &p))
	require.Equal(t, "cursor", p.Field)
}

// TestRunSetsWeightsDirectly: without Pylon, scorer signs set_weights with its hotkey and submits
// it to a (fake) subtensor node whose subnet has commit-reveal off.
func TestRunSetsWeightsDirectly(t *testing.T) {
	t.Parallel()
	alice, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	subnet := subtensortest.NewSubnet(subtensortest.NewNode(t), 12)
	subnet.Signer = alice.Address()
	subnet.Neurons = []subtensortest.Neuron{
		{Hot: alice.PublicKey(), UID: 0, Netuid: 12, Permit: true, LastUpdate: 1},
		{Hot: subtensortest.Key(1, 'm'), UID: 5, Netuid: 12},
	}
	subnet.At(t, 4000)
	dbURL := testdb.New(t)
	cfg := testConfig(dbURL)
	cfg.SubtensorURL, cfg.HotkeyURI, cfg.Netuid = subnet.Node.URL(), "//Alice", 12
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
	ins, err := queue.NewInserter(testdb.NewPoolFor(t, dbURL), queue.Scorer)
	require.NoError(t, err)
	miner := subtensortest.Key(1, 'm').Address()
	_, err = ins.Insert(context.Background(), queue.ScoreBatchArgs{
		BatchID: 3, StartedAt: time.Now(), Peak: true,
		Miners: []queue.MinerClassResult{{Hotkey: miner, ExecutorClass: scoring.HordeClass, Executors: 1, Completed: 1}},
	}, nil)
	require.NoError(t, err)

	var page struct {
		Items []struct {
			Outcome       string `json:"outcome"`
			Via           string `json:"via"`
			Block         int64  `json:"block"`
			ExtrinsicHash string `json:"extrinsic_hash"`
			Extrinsic     string `json:"extrinsic"`
		} `json:"items"`
	}
	require.Eventually(t, func() bool {
		servicetest.Call(t, http.MethodGet, base+"/v1/weights/submissions?limit=5", nil, &page)
		return len(page.Items) > 0 && page.Items[0].Outcome == "sent"
	}, 15*time.Second, 50*time.Millisecond)
	got := page.Items[0]
	require.Equal(t, "subtensor", got.Via)
	require.Equal(t, int64(4000), got.Block)
	sent := subnet.Submitted()
	require.Len(t, sent, 1)
	require.Equal(t, "0x"+hex.EncodeToString(sent[0]), got.Extrinsic)
	require.Equal(t, subtensor.ExtrinsicHash(sent[0]), got.ExtrinsicHash)
	m := servicetest.Metrics(t, base)
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_scorer_weight_submissions_total", map[string]string{"outcome": "sent"}))
	servicetest.RequireMetrics(t, base, weightsSentAge)
}

// weightsSentAge is the gauge of the last weights sent, which the stale-weights alert watches.
const weightsSentAge = "drover_scorer_weights_sent_age_seconds"

func TestRunRefusesDirectSigningWithoutAHotkey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"NoHotkey", func(c *Config) { c.SubtensorURL = "ws://127.0.0.1:9944" }, "no validator hotkey: set SCORER_HOTKEY_URI"},
		{"NotWebsocket", func(c *Config) { c.SubtensorURL, c.HotkeyURI = "http://127.0.0.1:9944", "//Alice" }, "is not a ws(s)://host:port address"},
		{"BadNetwork", func(c *Config) { c.Network, c.HotkeyURI = "mainnet", "//Alice" }, "BITTENSOR_NETWORK"},
		{"OtherValidator", func(c *Config) {
			c.SubtensorURL, c.HotkeyURI, c.ValidatorHotkey = "ws://127.0.0.1:9944", "//Alice", "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty"
		}, "is not the signing hotkey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("postgres://127.0.0.1:1/none")
			tc.cfg(&cfg)
			require.ErrorContains(t, run(context.Background(), cfg, nil, io.Discard), tc.want)
		})
	}
}

func TestCheckRefusesAScorerThatNeitherSetsNorOnlyServesWeights(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want string // "" when the configuration is fine
	}{
		{"NothingSetsWeights", func(c *Config) {}, "nothing sets the weights on chain: set SCORER_PYLON_ADDRESS"},
		{"ServeOnly", func(c *Config) { c.WeightsMode = "serve-only" }, ""},
		{"Pylon", func(c *Config) { c.PylonAddress = "http://pylon:8000" }, ""},
		{"Subtensor", func(c *Config) { c.SubtensorURL, c.HotkeyURI = "ws://127.0.0.1:9944", "//Alice" }, ""},
		{"ServeOnlyIgnoresTheChain", func(c *Config) { c.WeightsMode, c.SubtensorURL = "serve-only", "ws://127.0.0.1:9944" }, ""},
		{"UnknownMode", func(c *Config) { c.WeightsMode = "sometimes" }, `SCORER_WEIGHTS_MODE: "sometimes", want set or serve-only`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("postgres://127.0.0.1:1/none")
			cfg.HTTPAddr, cfg.WeightsMode = ":8083", "set"
			tc.cfg(&cfg)
			err := errors.Join(cfg.Check()...)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
