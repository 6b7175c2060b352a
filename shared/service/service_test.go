package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/queue"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func startService(t *testing.T, svc queue.Service, databaseURL string) string {
	t.Helper()
	return startServiceWith(t, svc, servicetest.Config(databaseURL))
}

// startServiceWith starts svc with the common settings cfg and no workers of its own.
func startServiceWith(t *testing.T, svc queue.Service, cfg config.Common) string {
	t.Helper()
	return servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		spec := Spec{Service: svc, Config: cfg, Settings: &struct{}{}, Listener: ln}
		return Run(ctx, spec, stdout, func(d *Deps) error {
			_, err := d.NewClient()
			return err
		})
	})
}

func call(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestProbesRoundTripBetweenEveryPairOfServices(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	bases := map[queue.Service]string{}
	for _, svc := range queue.Services {
		bases[svc] = startService(t, svc, dbURL)
	}

	type sent struct {
		from queue.Service
		id   float64
	}
	var probes []sent
	for _, from := range queue.Services {
		for _, to := range queue.Services {
			status, body := call(t, http.MethodPost, bases[from]+"/v1/probes", servicetest.Token, map[string]string{"target": string(to)})
			require.Equal(t, http.StatusCreated, status, "%s → %s: %v", from, to, body)
			probes = append(probes, sent{from, body["id"].(float64)})
		}
	}
	for _, p := range probes {
		url := fmt.Sprintf("%s/v1/probes/%d", bases[p.from], int64(p.id))
		require.Eventually(t, func() bool {
			_, body := call(t, http.MethodGet, url, servicetest.Token, nil)
			return body["state"] == "acked"
		}, 20*time.Second, 50*time.Millisecond, "probe %v from %s never came back", p.id, p.from)
	}

	// Each probe was worked by its target alone: every schema recorded exactly one arrival from
	// every service (25 probes, 5 per target).
	pool := testdb.NewPoolFor(t, dbURL)
	for _, svc := range queue.Services {
		var arrivals, origins int
		require.NoError(t, pool.QueryRow(context.Background(), fmt.Sprintf(
			`SELECT count(*), count(DISTINCT origin) FROM %s.probe_arrivals`, svc.Schema())).Scan(&arrivals, &origins))
		require.Equal(t, len(queue.Services), arrivals, svc)
		require.Equal(t, len(queue.Services), origins, svc)
	}
}

func TestProbeToUnknownServiceIsUnprocessable(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := startService(t, queue.Scorer, dbURL)

	status, body := call(t, http.MethodPost, base+"/v1/probes", servicetest.Token, map[string]string{"target": "billing"})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "target", body["field"])
	require.Equal(t, "https://drover.dev/problems/unprocessable", body["type"])

	status, doc := call(t, http.MethodGet, base+"/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, doc["paths"], "/v1/probes/{id}")

	status, _ = call(t, http.MethodPost, base+"/v1/probes", "", map[string]string{"target": "scorer"})
	require.Equal(t, http.StatusUnauthorized, status)

	pool := testdb.NewPoolFor(t, dbURL)
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM scorer.probes").Scan(&n))
	require.Zero(t, n, "a rejected probe writes nothing")
}

func TestRunRefusesWiringThatNeverBuildsTheRiverClient(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	spec := Spec{Service: queue.Scorer, Config: servicetest.Config(dbURL), Settings: &struct{}{}, Listener: ln}
	err = Run(context.Background(), spec, io.Discard, func(*Deps) error { return nil })
	require.ErrorContains(t, err, "River client was never built")
}
