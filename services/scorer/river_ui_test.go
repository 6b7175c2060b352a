package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/shared/probe"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

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

// TestRiverUIButtonsOnScoreBatch presses River UI's Cancel on a running score_batch job and then
// Retry, through River's own calls. The scoring is held running by a transaction of the test's
// that has inserted the batch's row first. Cancel stops it: nothing is scored, the job ends
// cancelled with the failure recorded in the same transaction, and the API says why the batch
// has no scores. Retry scores it. Each press is one river_ui_action line.
func TestRiverUIButtonsOnScoreBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	cfg := testConfig(dbURL)
	cfg.LogLevel, cfg.LogFormat = "info", "json"
	logs := &queuetest.UIActionLog{}
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, _ io.Writer) error {
		return run(ctx, cfg, ln, logs)
	})
	ui, err := queue.NewInserter(pool, queue.Scorer)
	require.NoError(t, err)

	holder, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Rollback(ctx) })
	_, err = holder.Exec(ctx, `INSERT INTO scorer.batches (id, started_at, peak) VALUES (31, now(), true)`)
	require.NoError(t, err)
	res, err := ui.Insert(ctx, queue.ScoreBatchArgs{BatchID: 31, StartedAt: time.Now(), Peak: true, Miners: []queue.MinerClassResult{
		{Hotkey: "5A", ExecutorClass: scoring.HordeClass, Executors: 1, Completed: 1},
	}}, nil)
	require.NoError(t, err)
	waitJob(t, ui, res.Job.ID, rivertype.JobStateRunning)
	_, err = ui.JobCancel(ctx, res.Job.ID)
	require.NoError(t, err)
	job := waitJob(t, ui, res.Job.ID, rivertype.JobStateCancelled)
	require.NoError(t, holder.Rollback(ctx))
	require.Contains(t, job.Errors[len(job.Errors)-1].Error, "cancelled from River UI while running (Retry the job to score batch 31)")
	var problem struct {
		Detail string `json:"detail"`
	}
	require.Equal(t, http.StatusConflict, servicetest.Call(t, http.MethodGet, base+"/v1/batches/31/scores", nil, &problem))
	require.Contains(t, problem.Detail, "cancelled from River UI while running")
	cancelled := queuetest.UIAction{Kind: "score_batch", JobID: res.Job.ID, Action: "cancel", Did: "stopped scoring batch 31: nothing scored, job cancelled"}
	require.Equal(t, []queuetest.UIAction{cancelled}, logs.UIActions(t, "score_batch"))

	_, err = ui.JobRetry(ctx, res.Job.ID)
	require.NoError(t, err)
	waitJob(t, ui, res.Job.ID, rivertype.JobStateCompleted)
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/v1/batches/31/scores", nil, nil))
	require.Equal(t, []queuetest.UIAction{
		cancelled,
		{Kind: "score_batch", JobID: res.Job.ID, Action: "retry", Did: "scored batch 31"},
	}, logs.UIActions(t, "score_batch"))
}

// TestRescueAfterIsTheShortestTimeout checks River's RescueStuckJobsAfter against every kind's
// timeout: the rescuer takes back a dead process's job once both have passed, so at most the
// shortest, each kind is back within its own timeout and 30 s.
func TestRescueAfterIsTheShortestTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig("postgres://unused")
	require.Equal(t, probe.Timeout, rescueAfter(cfg, nil))
	cfg.PylonAddress, cfg.PylonTimeout = "http://pylon:8000", time.Second
	require.Equal(t, 12*time.Second, rescueAfter(cfg, nil), "a set_weights job of two 1 s calls")
}
