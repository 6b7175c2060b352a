package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/queue/queuetest"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// TestCancelRoute runs a batch and cancels it over the API as an operator would, by the batch id
// POST /v1/batches answered (a second POST while it runs answers the same job and batch). The
// cancel's answer names the run_batch job and the request; the batch fails saying the API
// cancelled it, with that request's id, in its error, its event and its River job's error, the
// job ends cancelled, and the worker logs the request, not a River UI action. Cancelling it again
// is a 409 and an unknown batch a 404.
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
	base, logs := startLogged(t, cfg)

	first := createBatch(t, base)
	require.NotNil(t, first.BatchID, "the answer names the batch")
	require.False(t, first.Duplicate)
	running, ok := batchOfJob(t, base, first.JobID)
	require.True(t, ok)
	require.Equal(t, running.ID, *first.BatchID)
	require.Equal(t, created{JobID: first.JobID, BatchID: first.BatchID, Duplicate: true}, createBatch(t, base),
		"a batch asked for while one runs is that one")
	require.Eventually(t, func() bool {
		return len(fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0InitialJobRequest"})) == miners
	}, 10*time.Second, 10*time.Millisecond, "the batch did not reach the availability stage")

	var cancelled struct {
		ID          int64   `json:"id"`
		RiverJobIDs []int64 `json:"river_job_ids"`
		RequestID   string  `json:"request_id"`
	}
	url := fmt.Sprintf("%s/v1/batches/%d/cancel", base, *first.BatchID)
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, url, nil, &cancelled))
	require.Equal(t, running.ID, cancelled.ID)
	require.Equal(t, []int64{first.JobID}, cancelled.RiverJobIDs)
	require.NotEmpty(t, cancelled.RequestID)

	failed := waitDone(t, base, first.JobID, 20*time.Second)
	require.Equal(t, "failed", failed.State)
	byAPI := fmt.Sprintf("cancelled through the API (request %s) while running: ", cancelled.RequestID)
	require.True(t, strings.HasPrefix(*failed.Error, byAPI), "batch error: %s", *failed.Error)
	job, err := riverUI(t, pool).JobGet(context.Background(), first.JobID)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateCancelled, job.State)
	require.Contains(t, lastError(t, job), fmt.Sprintf("batch %d %s", failed.ID, byAPI))
	require.Equal(t, []string{"1/JOB_CANCELLED"}, riverJobEvents(t, base, failed.ID))
	require.Equal(t, fmt.Sprintf("POST /v1/batches/%d/cancel (request %s) stopped run_batch job %d; the batch failed",
		failed.ID, cancelled.RequestID, first.JobID), cancelEvent(t, base, failed.ID))
	line := waitLogLine(t, logs, "cancelled through the API")
	require.Equal(t, cancelled.RequestID, line["request_id"])
	require.Empty(t, logs.UIActions(t), "an API cancel is no River UI action")

	require.Equal(t, http.StatusConflict, servicetest.Call(t, http.MethodPost, url, nil, nil))
	require.Equal(t, http.StatusNotFound, servicetest.Call(t, http.MethodPost, base+"/v1/batches/999999/cancel", nil, nil))
}

// TestCancelRouteOnAShardedBatch cancels a two-shard batch over the API while both shards wait
// for their executors: each shard fails naming the request, and so the batch, with nothing
// scored and no River UI action logged.
func TestCancelRouteOnAShardedBatch(t *testing.T) {
	t.Parallel()
	dbURL, pool, fleet := shardFleet(t)
	base, logs := startLogged(t, shardConfig(dbURL, 2, 10*time.Second))

	batch := createBatch(t, base)
	require.NotNil(t, batch.BatchID, "the coordinator created the batch")
	require.Eventually(t, func() bool {
		return len(fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0InitialJobRequest"})) == 8
	}, 10*time.Second, 10*time.Millisecond, "both shards did not reach the availability stage")
	var cancelled struct {
		RiverJobIDs []int64 `json:"river_job_ids"`
		RequestID   string  `json:"request_id"`
	}
	url := fmt.Sprintf("%s/v1/batches/%d/cancel", base, *batch.BatchID)
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, url, nil, &cancelled))
	require.Len(t, cancelled.RiverJobIDs, 3, "the coordinator's job and both shards'")

	failed := waitDone(t, base, batch.JobID, 30*time.Second)
	require.Equal(t, "failed", failed.State)
	b := getSharded(t, base, failed.ID)
	ui := riverUI(t, pool)
	for _, s := range b.Shards {
		require.Equal(t, "failed", s.State, "shard %d", s.Shard)
		job, err := ui.JobGet(context.Background(), s.RiverJobID)
		require.NoError(t, err)
		require.Equal(t, rivertype.JobStateCancelled, job.State)
		require.Contains(t, lastError(t, job), fmt.Sprintf("cancelled through the API (request %s) while running: shard %d of batch %d",
			cancelled.RequestID, s.Shard, failed.ID))
	}
	require.Empty(t, scoreJobs(t, pool))
	waitLogLine(t, logs, "cancelled through the API")
	require.Empty(t, logs.UIActions(t), "an API cancel is no River UI action")
}

// cancelEvent returns the description of batch id's one JOB_CANCELLED event.
func cancelEvent(t *testing.T, base string, id int64) string {
	t.Helper()
	var b struct {
		Events []struct {
			Subtype     sysevent.Subtype `json:"subtype"`
			Description string           `json:"description"`
		} `json:"events"`
	}
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, id), nil, &b))
	var out []string
	for _, e := range b.Events {
		if e.Subtype == sysevent.JobCancelled {
			out = append(out, e.Description)
		}
	}
	require.Len(t, out, 1)
	return out[0]
}

// waitLogLine waits, at most 20 s, for the first line logged with message msg and returns it. A
// worker logs a cancel after the transaction that ends its job has committed, so the line can
// come after the batch's state that a test waited for.
func waitLogLine(t *testing.T, logs *queuetest.UIActionLog, msg string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range logs.Lines(t) {
			if line["msg"] == msg {
				return line
			}
		}
	}
	t.Fatalf("no %q line logged", msg)
	return nil
}
