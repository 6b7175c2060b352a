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
	require.Less(t, servicetest.Value(t, m, "drover_scorer_weights_sent_age_seconds", nil), 60.0)

	var p struct{ Field string }
	require.Equal(t, http.StatusBadRequest, servicetest.Call(t, http.MethodGet, base+"/v1/weights/submissions?limit=0", nil, &p))
	require.Equal(t, "limit", p.Field)
	require.Equal(t, http.StatusBadRequest, servicetest.Call(t, http.MethodGet, base+"/v1/weights/submissions?cursor=x", nil, &p))
	require.Equal(t, "cursor", p.Field)
}
