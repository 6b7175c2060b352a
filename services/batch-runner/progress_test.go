package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// currentProgress polls GET /v1/batches/current until ok accepts what it serves.
func currentProgress(t *testing.T, base string, ok func(batch.ProgressView) bool) batch.ProgressView {
	t.Helper()
	var v batch.ProgressView
	require.Eventually(t, func() bool {
		v = batch.ProgressView{}
		if servicetest.Call(t, http.MethodGet, base+"/v1/batches/current", nil, &v) != http.StatusOK {
			return false
		}
		return ok(v)
	}, 30*time.Second, 10*time.Millisecond)
	return v
}

// requireNoCurrent checks that GET /v1/batches/current is a problem+json 404, and that it is
// behind the bearer token like the rest of /v1.
func requireNoCurrent(t *testing.T, base string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/batches/current", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/batches/current", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+servicetest.Token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	var p struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	require.Equal(t, "https://drover.dev/problems/not-found", p.Type)
}

func stageNames(v batch.ProgressView) (names []string, finished []bool) {
	for _, s := range v.Stages {
		names = append(names, s.Name)
		finished = append(finished, s.FinishedAt != nil)
	}
	return names, finished
}

// TestCurrentBatchShowsProgress follows a batch through GET /v1/batches/current while phase 2
// runs (it writes nothing to the database then): the availability stage, held open by a
// 1.5-second spin-up, and the hot phase, held open by a miner that answers 2 s after the time
// limit. The limit is 3 s, not testConfig's 10 s, so the batch waits less for the late miner,
// and still leaves the honest miners room on a loaded machine (see testConfig). Before the batch
// and once it is written, there is no current batch.
func TestCurrentBatchShowsProgress(t *testing.T) {
	t.Parallel()
	const limit = 3 * time.Second
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	startFleet(t, pool, minersim.Config{
		Miners: 3, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 2}}, SpinUp: 20 * time.Millisecond,
		Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{2: {AnswerDelay: minersim.Duration(limit + 2*time.Second)}}},
	})
	cfg := testConfig(dbURL)
	cfg.SpinUps = map[string]time.Duration{"*": 1500 * time.Millisecond}
	cfg.PoWTimeLimit = limit
	base := startService(t, cfg)
	requireNoCurrent(t, base)

	jobID := enqueueBatch(t, base)
	v := currentProgress(t, base, func(v batch.ProgressView) bool { return v.Stage == "availability" })
	require.Equal(t, jobID, v.JobID)
	require.Positive(t, v.BatchID)
	require.Equal(t, batch.PhaseRun, v.Phase)
	names, finished := stageNames(v)
	require.Equal(t, []string{"manifests", "generate", "availability"}, names)
	require.Equal(t, []bool{true, true, false}, finished)
	require.Equal(t, int64(3), v.Miners)
	require.Equal(t, batch.ManifestCounts{Received: 3}, v.Manifests)
	require.Equal(t, int64(6), v.Executors)
	require.Nil(t, v.Hot.ReleasedAt)

	// The two prompt miners' answers are in; the late one's are not, so the stage still runs.
	v = currentProgress(t, base, func(v batch.ProgressView) bool { return v.Stage == "hot" && v.Hot.Finished == 4 })
	require.Equal(t, batch.AvailabilityView{Accepted: 6, Ready: 6}, v.Availability)
	require.Equal(t, int64(6), v.Hot.Jobs)
	require.NotNil(t, v.Hot.ReleasedAt, "the release is recorded once the writes end, before any answer")
	require.Equal(t, 6, v.Hot.Sent)
	require.NotNil(t, v.Hot.SendSpreadUS)
	require.Zero(t, v.Hot.Failed)

	b := waitDone(t, base, jobID, 30*time.Second)
	require.Equal(t, v.BatchID, b.ID)
	require.Equal(t, "done", b.State, "error: %v", b.Error)
	requireCounts(t, map[string]int{"completed": 4, "failed": 2}, b)
	// The counts each stage ended with stay with the batch once the live record is gone.
	var stored struct {
		Stages []batch.Stage `json:"stages"`
	}
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, b.ID), nil, &stored))
	require.Len(t, stored.Stages, 5)
	require.Equal(t, "hot", stored.Stages[3].Name)
	require.Equal(t, map[string]int64{"jobs": 6, "sent": 6, "send_failed": 0, "finished": 4, "failed": 0}, stored.Stages[3].Counts)
	// The record goes when the worker returns, just after the results commit.
	require.Eventually(t, func() bool {
		return servicetest.Call(t, http.MethodGet, base+"/v1/batches/current", nil, nil) == http.StatusNotFound
	}, 10*time.Second, 10*time.Millisecond)
	requireNoCurrent(t, base)
}
