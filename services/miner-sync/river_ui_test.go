package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/shared/probe"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// TestRiverUIButtonsOnSyncMetagraph presses River UI's buttons on a sync_metagraph job through
// River's own calls. Cancel on a sync held running by its source stops it: nothing is applied,
// and a failed sync event commits with the job's cancellation. Retry on the cancelled job, and
// again on the completed one, syncs for real, each with a sync event whose reason is river_ui.
// Each press is one river_ui_action line.
func TestRiverUIButtonsOnSyncMetagraph(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &fleet{status: http.StatusOK}
	f.serve(t, http.StatusOK, validator(t, 0), neuron(t, 1, false), neuron(t, 2, false))
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	dbURL := testdb.New(t)
	cfg := testConfig(t, dbURL, srv.URL+"/metagraph")
	cfg.LogLevel, cfg.LogFormat = "info", "json"
	logs := &queuetest.UIActionLog{}
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, _ io.Writer) error {
		return run(ctx, cfg, ln, logs)
	})
	bundle := &testBundle{base: base, fleet: f}
	ui, err := queue.NewInserter(testdb.NewPoolFor(t, dbURL), queue.MinerSync)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(bundle.miners(t, "?active=true").Miners) == 3 }, 10*time.Second, 20*time.Millisecond)

	// Miner 2 deregisters, and the source holds its answer: the sync stays running.
	gate := make(chan struct{})
	f.serve(t, http.StatusOK, validator(t, 0), neuron(t, 1, false))
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	var created struct {
		JobID int64 `json:"job_id"`
	}
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/sync", nil, &created))
	waitJob(t, ui, created.JobID, rivertype.JobStateRunning)
	_, err = ui.JobCancel(ctx, created.JobID)
	require.NoError(t, err)
	job := waitJob(t, ui, created.JobID, rivertype.JobStateCancelled)
	require.Contains(t, job.Errors[len(job.Errors)-1].Error, "cancelled from River UI while running; the last good miners stay")
	latest := latestEvent(t, base)
	require.Equal(t, "failed", latest.Outcome)
	require.Equal(t, "api", latest.Reason)
	require.Contains(t, *latest.Error, "cancelled from River UI while running")
	require.Len(t, bundle.miners(t, "?active=true").Miners, 3, "nothing applied")
	close(gate)

	_, err = ui.JobRetry(ctx, created.JobID)
	require.NoError(t, err)
	waitJob(t, ui, created.JobID, rivertype.JobStateCompleted)
	latest = latestEvent(t, base)
	require.Equal(t, "ok", latest.Outcome, "the retry's sync event (reason %s, error %v)", latest.Reason, latest.Error)
	require.Equal(t, "river_ui", latest.Reason)
	require.Len(t, bundle.miners(t, "?active=true").Miners, 2, "the retry synced")

	f.serve(t, http.StatusOK, validator(t, 0), neuron(t, 1, false), neuron(t, 2, false))
	_, err = ui.JobRetry(ctx, created.JobID)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(bundle.miners(t, "?active=true").Miners) == 3 }, 10*time.Second, 20*time.Millisecond)
	waitJob(t, ui, created.JobID, rivertype.JobStateCompleted)
	require.Equal(t, "river_ui", latestEvent(t, base).Reason)
	require.Equal(t, []queuetest.UIAction{
		{Kind: "sync_metagraph", JobID: created.JobID, Action: "cancel", Did: "stopped the sync: nothing applied, failed sync event, job cancelled"},
		{Kind: "sync_metagraph", JobID: created.JobID, Action: "retry", Did: "synced again: ok"},
		{Kind: "sync_metagraph", JobID: created.JobID, Action: "retry", Did: "synced again: ok"},
	}, logs.UIActions(t))
}

// syncEvent is an event of GET /v1/sync/events.
type syncEvent struct {
	Reason  string  `json:"reason"`
	Outcome string  `json:"outcome"`
	Error   *string `json:"error"`
}

func latestEvent(t *testing.T, base string) syncEvent {
	t.Helper()
	var page struct {
		Items []syncEvent `json:"items"`
	}
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/v1/sync/events?limit=1", nil, &page))
	require.Len(t, page.Items, 1)
	return page.Items[0]
}

// waitJob polls River's row of job id until it is in state, and returns it.
func waitJob(t *testing.T, ui *queue.Client, id int64, state rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	var job *rivertype.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = ui.JobGet(context.Background(), id)
		require.NoError(t, err)
		return job.State == state
	}, 20*time.Second, 10*time.Millisecond, "job %d never %s", id, state)
	return job
}

// TestRescueAfterIsTheShortestTimeout checks River's RescueStuckJobsAfter against every kind's
// timeout: the rescuer takes back a dead process's job once both have passed, so at most the
// shortest, each kind is back within its own timeout and 30 s.
func TestRescueAfterIsTheShortestTimeout(t *testing.T) {
	t.Parallel()
	require.Equal(t, probe.Timeout, rescueAfter(40*time.Second))
	require.Equal(t, 20*time.Second, rescueAfter(20*time.Second))
}
