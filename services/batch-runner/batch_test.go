package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// startFleet starts simulated miners on loopback and writes their metagraph into
// miner_sync.miners as miner-sync stores it (neurons with no axon, the validators, kept with
// serving = false): the documented cross-read is all batch-runner knows of miner-sync.
func startFleet(t *testing.T, pool *pgxpool.Pool, cfg minersim.Config) *minersim.Fleet {
	t.Helper()
	fleet, err := minersim.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fleet.Close() })
	listFleet(t, pool, fleet)
	return fleet
}

// listFleet writes fleet's metagraph into miner_sync.miners of pool's database.
func listFleet(t *testing.T, pool *pgxpool.Pool, fleet *minersim.Fleet) {
	t.Helper()
	for _, n := range fleet.Metagraph().Miners {
		_, err := pool.Exec(context.Background(), `
			INSERT INTO miner_sync.miners (hotkey, uid, coldkey, ip, port, stake, is_validator, serving)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			n.Hotkey, n.UID, n.Coldkey, n.IP, n.Port, n.Stake, n.Validator, n.Port != 0)
		require.NoError(t, err)
	}
}

// batchView is the part of GET /v1/batches/{id} these tests read.
type batchView struct {
	ID      int64          `json:"id"`
	Attempt int            `json:"attempt"`
	State   string         `json:"state"`
	Error   *string        `json:"error"`
	Miners  int            `json:"miners"`
	Counts  map[string]int `json:"counts"`
	Jobs    []store.Job    `json:"jobs"`
}

// requireCounts checks the batch's outcome counts and, when they differ, names every job that
// did not complete with its reason and timings, so that a failure says which bound was missed.
func requireCounts(t *testing.T, want map[string]int, b batchView) {
	t.Helper()
	if reflect.DeepEqual(want, b.Counts) {
		return
	}
	var notes []string
	for _, j := range b.Jobs {
		if j.Outcome == batch.OutcomeCompleted {
			continue
		}
		raw, _ := json.Marshal(j)
		notes = append(notes, string(raw))
	}
	require.Equal(t, want, b.Counts, "jobs not completed:\n%s", strings.Join(notes, "\n"))
}

// created is the answer of POST /v1/batches.
type created struct {
	JobID     int64  `json:"job_id"`
	BatchID   *int64 `json:"batch_id"`
	Duplicate bool   `json:"duplicate"`
}

// createBatch asks batch-runner for a batch now and returns its answer.
func createBatch(t *testing.T, base string) created {
	t.Helper()
	var c created
	require.Equal(t, http.StatusAccepted, servicetest.Call(t, http.MethodPost, base+"/v1/batches", nil, &c))
	require.Positive(t, c.JobID)
	return c
}

// enqueueBatch asks for a batch now and returns its run_batch job.
func enqueueBatch(t *testing.T, base string) int64 {
	t.Helper()
	return createBatch(t, base).JobID
}

// batchOfJob returns the batch of a run_batch job, or false while phase 1 has not created it.
func batchOfJob(t *testing.T, base string, jobID int64) (batchView, bool) {
	t.Helper()
	var list struct {
		Items []batchView `json:"items"`
	}
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/batches?job_id=%d", base, jobID), nil, &list))
	if len(list.Items) == 0 {
		return batchView{}, false
	}
	require.Len(t, list.Items, 1, "one batch row per run_batch job")
	return list.Items[0], true
}

// waitDone polls GET /v1/batches/{id} of jobID's batch until it is no longer running.
func waitDone(t *testing.T, base string, jobID int64, within time.Duration) batchView {
	t.Helper()
	var b batchView
	require.Eventually(t, func() bool {
		found, ok := batchOfJob(t, base, jobID)
		if !ok {
			return false
		}
		b = batchView{}
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, found.ID), nil, &b))
		return b.State != "running"
	}, within, 50*time.Millisecond)
	return b
}

// requireNamedWhileRunning waits for phase 1 to create jobID's batch and requires the run_batch
// River row to name it as its output while the batch still runs.
func requireNamedWhileRunning(t *testing.T, pool *pgxpool.Pool, base string, jobID int64) {
	t.Helper()
	var found batchView
	require.Eventually(t, func() bool {
		var ok bool
		found, ok = batchOfJob(t, base, jobID)
		return ok
	}, 10*time.Second, 20*time.Millisecond)
	var batchID int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT coalesce((metadata->'output'->>'batch_id')::bigint, 0)
		FROM batch_runner.river_job WHERE id = $1`, jobID).Scan(&batchID))
	require.Equal(t, "running", found.State, "the batch is seen before it ends")
	require.Equal(t, found.ID, batchID, "the River row names its batch as soon as the batch exists")
}

// scoreJobs returns the args of every score_batch job waiting in scorer's queue.
func scoreJobs(t *testing.T, pool *pgxpool.Pool) []queue.ScoreBatchArgs {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT args FROM scorer.river_job WHERE kind = $1 ORDER BY id`, queue.ScoreBatchArgs{}.Kind())
	require.NoError(t, err)
	defer rows.Close()
	var out []queue.ScoreBatchArgs
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var args queue.ScoreBatchArgs
		require.NoError(t, json.Unmarshal(raw, &args))
		out = append(out, args)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestRunBatchEndToEnd drives a whole batch through the service: miners read from
// miner_sync.miners, POST /v1/batches, phase 2 against a simulated fleet, and one score_batch job
// for scorer with the totals per miner and class. Miner 1 declines busy with receipts signed by a
// validator it only knows from the miners table, miner 2 answers wrong.
func TestRunBatchEndToEnd(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	fleet := startFleet(t, pool, minersim.Config{
		Miners: 4, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 2}}, SpinUp: 20 * time.Millisecond,
		Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{
			1: {Decline: minersim.DeclineBusyValid},
			2: {Answer: minersim.AnswerWrong},
		}},
	})
	cfg := testConfig(dbURL)
	// Busy declines carry receipts the fleet signs on the spot: room for a loaded -race run.
	cfg.SpinUps = map[string]time.Duration{"*": 1500 * time.Millisecond}
	base := startService(t, cfg)

	jobID := enqueueBatch(t, base)
	requireNamedWhileRunning(t, pool, base, jobID)
	b := waitDone(t, base, jobID, 30*time.Second)
	require.Equal(t, "done", b.State, "error: %v", b.Error)
	require.Equal(t, 4, b.Miners, "the fleet's validators are not tested")
	requireCounts(t, map[string]int{"completed": 4, "excused": 2, "failed": 2}, b)
	require.Len(t, b.Jobs, 8)
	requireBatchMetrics(t, base)

	m := fleet.Miners()
	want := map[string]queue.MinerClassResult{}
	for i, done := range []queue.MinerClassResult{{Completed: 2}, {Excused: 2}, {Failed: 2}, {Completed: 2}} {
		done.Hotkey, done.ExecutorClass, done.Executors = m[i].Hotkey, "always_on.test", 2
		want[m[i].Hotkey] = done
	}
	scores := scoreJobs(t, pool)
	require.Len(t, scores, 1, "exactly one score_batch job for scorer")
	require.Equal(t, b.ID, scores[0].BatchID)
	got := map[string]queue.MinerClassResult{}
	for _, r := range scores[0].Miners {
		got[r.Hotkey] = r
	}
	require.Equal(t, want, got)
}

// TestFailedBatchIsAFailedRiverJob runs a batch that outlives its job timeout on its only
// attempt: the batch row and the run_batch River job both say it failed, with the same cause.
func TestFailedBatchIsAFailedRiverJob(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	startFleet(t, pool, minersim.Config{Miners: 2, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond})
	cfg := testConfig(dbURL)
	cfg.JobTimeout = time.Second
	cfg.SpinUps = map[string]time.Duration{"*": 3 * time.Second}
	base := startService(t, cfg)

	ins, err := queue.NewInserter(pool, queue.BatchRunner)
	require.NoError(t, err)
	res, err := ins.Insert(context.Background(), queue.RunBatchArgs{Reason: "api", RequestedAt: time.Now()}, &river.InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	b := waitDone(t, base, res.Job.ID, 20*time.Second)
	require.Equal(t, "failed", b.State)
	require.NotNil(t, b.Error)

	var state, msg string
	var batchID int64
	// Committed with the batch row: no waiting for River's completer.
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT state::text, coalesce(errors[1]->>'error', ''),
		coalesce((metadata->'output'->>'batch_id')::bigint, 0) FROM batch_runner.river_job WHERE id = $1`, res.Job.ID).Scan(&state, &msg, &batchID))
	require.Equal(t, "discarded", state)
	require.Equal(t, b.ID, batchID)
	require.Contains(t, msg, fmt.Sprintf("batch %d failed on attempt 1 of 1", b.ID))
	require.Contains(t, msg, *b.Error)
}

// requireBatchMetrics checks what /metrics says of TestRunBatchEndToEnd's batch, and that it
// exposes every batch-runner family the dashboards and alert rules name.
func requireBatchMetrics(t *testing.T, base string) {
	t.Helper()
	servicetest.RequireMetrics(t, base, servicetest.NamedMetrics(t, "drover_batch_runner_")...)
	servicetest.RequireMetrics(t, base, "drover_batch_runner_batches_total", "drover_batch_runner_stage_duration_seconds",
		"drover_batch_runner_executors_total", "drover_batch_runner_last_batch_send_spread_seconds",
		"drover_batch_runner_last_batch_arrival_spread_seconds", "drover_batch_runner_cycle_seconds",
		"drover_batch_runner_last_batch_age_seconds", "drover_batch_runner_last_batch_failed", "drover_batch_runner_lease_takeovers_total")
	m := servicetest.Metrics(t, base)
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_batch_runner_batches_total", map[string]string{"outcome": "done"}))
	require.Equal(t, 2.0, servicetest.Value(t, m, "drover_batch_runner_executors_total", map[string]string{"outcome": "excused", "class": "always_on.test"}))
	require.Equal(t, 1.0, servicetest.Value(t, m, "drover_batch_runner_stage_duration_seconds", map[string]string{"stage": "hot"}))
	require.Equal(t, 0.0, servicetest.Value(t, m, "drover_batch_runner_last_batch_failed", nil))
	require.Equal(t, 0.0, servicetest.Value(t, m, "drover_batch_runner_lease_takeovers_total", map[string]string{"of": "batch"}))
	require.Positive(t, servicetest.Value(t, m, "drover_batch_runner_last_batch_send_spread_seconds", nil))
}
