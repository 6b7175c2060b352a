package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFollowBatchAnnouncesTheMinersOncePlanned replays a batch whose row is listed before
// batch-runner has recorded its miners: drover announces the batch with the miners it will test,
// not the 0 of the row not yet planned, and before any of its stages.
func TestFollowBatchAnnouncesTheMinersOncePlanned(t *testing.T) {
	t.Parallel()
	var lists atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/batches":
			n := lists.Add(1)
			miners, state := 0, "running" // the row before phase 1 has recorded the plan
			switch {
			case n >= 4:
				miners, state = 50, "done"
			case n >= 2:
				miners = 50
			}
			fmt.Fprintf(w, `{"items":[{"id":7,"state":%q,"miners":%d,"counts":{"completed":50}}]}`, state, miners)
		case "/v1/batches/current":
			fmt.Fprint(w, `{"job_id":12,"stages":[{"name":"manifests","started_at":"2026-11-28T21:55:09Z"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	a := &app{ctx: context.Background(), cfg: config{urls: map[string]string{batchRunner: srv.URL}},
		api: &client{cfg: config{urls: map[string]string{batchRunner: srv.URL}}, http: srv.Client()}}
	var out strings.Builder
	id, err := a.followBatch(12, &out)
	require.NoError(t, err)
	require.Equal(t, int64(7), id)
	require.Equal(t, "batch 7 running: 50 miners to test\n  manifests     started\nbatch 7 done: jobs completed=50\n", out.String())
}
