package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// startLogged is startService with the service's info log kept in a buffer.
func startLogged(t *testing.T, cfg Config) (string, *queuetest.UIActionLog) {
	t.Helper()
	logs := &queuetest.UIActionLog{}
	cfg.LogLevel, cfg.LogFormat = "info", "json"
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, _ io.Writer) error {
		return run(ctx, cfg, ln, logs)
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("batch-runner log:\n%s", logs.String())
		}
	})
	return base, logs
}

// riverUI returns a River client on batch-runner's schema: River UI's buttons are its JobRetry,
// JobCancel and JobDelete.
func riverUI(t *testing.T, pool *pgxpool.Pool) *queue.Client {
	t.Helper()
	client, err := queue.NewInserter(pool, queue.BatchRunner)
	require.NoError(t, err)
	return client
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
	}, 2*time.Minute, 20*time.Millisecond, "job %d never %s", id, state)
	return job
}

// lastError is the error River recorded last on job.
func lastError(t *testing.T, job *rivertype.JobRow) string {
	t.Helper()
	require.NotEmpty(t, job.Errors)
	return job.Errors[len(job.Errors)-1].Error
}

// eventView is an event of GET /v1/batches/{id}.
type eventView struct {
	Attempt int              `json:"attempt"`
	Shard   *int             `json:"shard"`
	Type    sysevent.Type    `json:"type"`
	Subtype sysevent.Subtype `json:"subtype"`
}

// riverJobEvents returns the batch's RIVER_JOB events as attempt/subtype, in order.
func riverJobEvents(t *testing.T, base string, id int64) []string {
	t.Helper()
	var b struct {
		Events []eventView `json:"events"`
	}
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, id), nil, &b))
	var out []string
	for _, e := range b.Events {
		if e.Type == sysevent.TypeRiverJob {
			out = append(out, fmt.Sprintf("%d/%s", e.Attempt, e.Subtype))
		}
	}
	return out
}

// TestRiverUIButtonsOnRunBatch presses River UI's buttons on one run_batch job as an operator
// would, through River's own calls. Cancel while the batch is in phase 2 stops it: the batch
// fails saying so, in the transaction that cancels the job. Retry on that cancelled job runs the
// batch again (attempt 2) to done. Retry on the completed job runs nothing and ends it cancelled,
// naming POST /v1/batches; nothing is written or scored again. Each press is one event on the
// batch and one river_ui_action log line.
func TestRiverUIButtonsOnRunBatch(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	const miners = 2
	fleet := startFleet(t, pool, minersim.Config{
		Miners: miners, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond,
	})
	cfg := testConfig(dbURL)
	// A spin-up long enough to press Cancel during it, short enough for the retry to finish soon.
	cfg.SpinUps = map[string]time.Duration{"*": 2 * time.Second}
	base, logs := startLogged(t, cfg)
	ui := riverUI(t, pool)
	ctx := context.Background()

	jobID := enqueueBatch(t, base)
	require.Eventually(t, func() bool {
		return len(fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0InitialJobRequest"})) == miners
	}, 10*time.Second, 10*time.Millisecond, "the batch did not reach the availability stage")
	_, err := ui.JobCancel(ctx, jobID)
	require.NoError(t, err)
	failed := waitDone(t, base, jobID, 20*time.Second)
	require.Equal(t, "failed", failed.State)
	require.Contains(t, *failed.Error, "cancelled from River UI while running")
	job, err := ui.JobGet(ctx, jobID)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateCancelled, job.State, "the job ended with the batch, in its transaction")
	require.Contains(t, lastError(t, job), fmt.Sprintf("batch %d cancelled from River UI while running", failed.ID))
	require.Equal(t, []string{"1/JOB_CANCELLED"}, riverJobEvents(t, base, failed.ID))
	require.Empty(t, scoreJobs(t, pool))

	_, err = ui.JobRetry(ctx, jobID)
	require.NoError(t, err)
	waitJob(t, ui, jobID, rivertype.JobStateCompleted)
	done := waitDone(t, base, jobID, 20*time.Second)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	require.Equal(t, failed.ID, done.ID)
	require.Equal(t, 2, done.Attempt, "the retry ran the cancelled batch again")
	requireCounts(t, map[string]int{"completed": miners}, done)
	require.Len(t, scoreJobs(t, pool), 1)
	require.Equal(t, []string{"1/JOB_CANCELLED", "2/JOB_RETRIED"}, riverJobEvents(t, base, done.ID))

	before := resultRows(t, pool)
	_, err = ui.JobRetry(ctx, jobID)
	require.NoError(t, err)
	job = waitJob(t, ui, jobID, rivertype.JobStateCancelled)
	require.Contains(t, lastError(t, job), fmt.Sprintf("batch %d of job %d is done", done.ID, jobID))
	require.Contains(t, lastError(t, job), "use POST /v1/batches to run a new batch")
	require.Equal(t, before, resultRows(t, pool), "a retry of a done batch writes nothing and scores nothing")
	again := waitDone(t, base, jobID, time.Second)
	require.Equal(t, "done", again.State)
	require.Equal(t, 2, again.Attempt)
	require.Equal(t, []string{"1/JOB_CANCELLED", "2/JOB_RETRIED", "2/RETRY_REFUSED"}, riverJobEvents(t, base, done.ID))

	actions := logs.UIActions(t)
	require.Len(t, actions, 3, "one line per press: %+v", actions)
	for i, want := range []struct{ action, did string }{
		{"cancel", fmt.Sprintf("stopped batch %d: failed, job cancelled", done.ID)},
		{"retry", fmt.Sprintf("runs failed batch %d again (attempt 2)", done.ID)},
		{"retry", "nothing run, job cancelled: " + fmt.Sprintf("batch %d of job %d is done", done.ID, jobID)},
	} {
		require.Equal(t, "run_batch", actions[i].Kind)
		require.Equal(t, jobID, actions[i].JobID)
		require.Equal(t, want.action, actions[i].Action)
		require.Contains(t, actions[i].Did, want.did)
	}
}

// TestRiverUICancelOnARunningShard presses River UI's Cancel on one shard of a two-shard batch
// during its spin-up. The shard fails saying so, in the transaction that cancels its job; the
// other shard goes on without it and ends the batch done, scored once with its own miners only.
func TestRiverUICancelOnARunningShard(t *testing.T) {
	t.Parallel()
	dbURL, pool, fleet := shardFleet(t)
	base, logs := startLogged(t, shardConfig(dbURL, 2, 10*time.Second))
	ui := riverUI(t, pool)
	ctx := context.Background()

	jobID := enqueueBatch(t, base)
	require.Eventually(t, func() bool {
		return len(fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0InitialJobRequest"})) == 8
	}, 10*time.Second, 10*time.Millisecond, "both shards did not reach the availability stage")
	var shardJob int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM batch_runner.river_job
		WHERE kind = 'run_batch_shard' AND (args ->> 'shard')::int = 0`).Scan(&shardJob))
	_, err := ui.JobCancel(ctx, shardJob)
	require.NoError(t, err)

	done := waitDone(t, base, jobID, 30*time.Second)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	b := getSharded(t, base, done.ID)
	require.Equal(t, "failed", b.Shards[0].State)
	require.Equal(t, "done", b.Shards[1].State)
	requireCounts(t, map[string]int{"completed": 4}, b.batchView)
	job, err := ui.JobGet(ctx, shardJob)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateCancelled, job.State)
	require.Contains(t, lastError(t, job), "shard 0 of batch")
	require.Contains(t, lastError(t, job), "cancelled from River UI while running")
	require.Equal(t, []string{"1/JOB_CANCELLED"}, riverJobEvents(t, base, done.ID))
	scores := scoreJobs(t, pool)
	require.Len(t, scores, 1, "scored once")
	require.Len(t, scores[0].Miners, 2, "the cancelled shard's miners are not scored")
	actions := logs.UIActions(t)
	require.Len(t, actions, 1)
	require.Equal(t, queuetest.UIAction{Kind: "run_batch_shard", JobID: shardJob, Action: "cancel",
		Did: fmt.Sprintf("stopped shard 0 of batch %d: failed, job cancelled", done.ID)}, actions[0])
}
