package service

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// probeRoundTrips sends n probes from the service at base to target, each once the previous one
// is back, and returns their round trips (sent → acknowledged at the origin), sorted. Each round
// trip is two River hops: the probe into target's queue and its acknowledgement back.
func probeRoundTrips(t *testing.T, base string, target queue.Service, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		status, body := call(t, http.MethodPost, base+"/v1/probes", servicetest.Token, map[string]string{"target": string(target)})
		require.Equal(t, http.StatusCreated, status, body)
		url := fmt.Sprintf("%s/v1/probes/%d", base, int64(body["id"].(float64)))
		var got map[string]any
		require.Eventually(t, func() bool {
			_, got = call(t, http.MethodGet, url, servicetest.Token, nil)
			return got["state"] == "acked"
		}, 10*time.Second, 5*time.Millisecond)
		out = append(out, time.Duration(got["round_trip_ms"].(float64)*float64(time.Millisecond)))
	}
	slices.Sort(out)
	return out
}

// A job a service inserts into its own queue, right after the same insert-only client notified
// that queue for the job it is working, is picked up as one inserted by another service is: on
// its insert's notification. River's insert-notification limiter would otherwise drop the second
// notification and leave the job to the next poll. The services poll once a minute here, so a
// probe whose notification was dropped is not acked within the 10 s each probe is given; the
// round trips (about 95 ms each) are logged, not bounded.
func TestSameServiceHopIsAsFastAsCrossService(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	populate := startNotifiedService(t, queue.PopulateWorker, dbURL)
	startNotifiedService(t, queue.Scorer, dbURL)

	const n = 20
	own := probeRoundTrips(t, populate, queue.PopulateWorker, n)
	cross := probeRoundTrips(t, populate, queue.Scorer, n)
	t.Logf("round trips over %d probes: own queue p50 %v max %v; cross-service p50 %v max %v",
		n, own[n/2], own[n-1], cross[n/2], cross[n-1])
}

// startNotifiedService starts svc polling its queues only once a minute: a job reaches it at
// once only through its insert's notification.
func startNotifiedService(t *testing.T, svc queue.Service, databaseURL string) string {
	t.Helper()
	return servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		spec := Spec{Service: svc, Config: servicetest.Config(databaseURL), Settings: &struct{}{}, Listener: ln,
			Fetch: queue.Fetch{PollInterval: time.Minute}}
		return Run(ctx, spec, stdout, func(d *Deps) error {
			_, err := d.NewClient()
			return err
		})
	})
}
