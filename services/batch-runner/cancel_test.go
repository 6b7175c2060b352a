package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// TestCancelRoute cancels a running batch over the API: the answer names the run_batch job, the
// batch fails saying it was cancelled, its job ends cancelled; cancelling it again is a 409 and
// an unknown batch a 404.
func TestCancelRoute(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	const miners = 2
	fleet := startFleet(t, pool, minersim.Config{
		Miners: miners, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond,
	})
	cfg := testConfig(dbURL)
	cfg.SpinUps = map[string]time.Duration{"*": 2 * time.Second} // long enough to cancel during it
	base, _ := startLogged(t, cfg)

	jobID := enqueueBatch(t, base)
	require.Eventually(t, func() bool {
		return len(fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0InitialJobRequest"})) == miners
	}, 10*time.Second, 10*time.Millisecond, "the batch did not reach the availability stage")
	running, ok := batchOfJob(t, base, jobID)
	require.True(t, ok)

	var cancelled struct {
		ID          int64   `json:"id"`
		RiverJobIDs []int64 `json:"river_job_ids"`
	}
	url := fmt.Sprintf("%s/v1/batches/%d/cancel", base, running.ID)
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, url, nil, &cancelled))
	require.Equal(t, running.ID, cancelled.ID)
	require.Equal(t, []int64{jobID}, cancelled.RiverJobIDs)

	failed := waitDone(t, base, jobID, 20*time.Second)
	require.Equal(t, "failed", failed.State)
	require.Contains(t, *failed.Error, "cancelled")
	job, err := riverUI(t, pool).JobGet(context.Background(), jobID)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateCancelled, job.State)

	require.Equal(t, http.StatusConflict, servicetest.Call(t, http.MethodPost, url, nil, nil))
	require.Equal(t, http.StatusNotFound, servicetest.Call(t, http.MethodPost, base+"/v1/batches/999999/cancel", nil, nil))
}
