package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// TestKilledShardRetriesOnce runs a two-shard batch on two processes, one shard each, and
// SIGKILLs one of them during the spin-up. The surviving shard waits SHARD_WAIT for the dead
// one, goes on alone and writes its results; the batch stays running. River hands the dead
// shard's job to the survivor once its lease lapsed; the retry takes the shard over (attempt 2),
// sends late, writes its results once, and ends the batch with one score_batch.
func TestKilledShardRetriesOnce(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dbURL, pool, fleet := shardFleet(t)
	env := processEnv(dbURL, 2*time.Second)
	env["BATCH_RUNNER_SHARD_MINERS"], env["BATCH_RUNNER_SHARD_WORKERS"], env["BATCH_RUNNER_SHARD_WAIT"] = "2", "1", "1s"
	env["BATCH_RUNNER_WORKER_ID"] = "victim"
	victim := startProcess(t, bin, env)
	env["BATCH_RUNNER_WORKER_ID"] = "survivor"
	survivor := startProcess(t, bin, env)

	jobID := enqueueBatch(t, survivor.base)
	require.Eventually(t, func() bool {
		return len(fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0InitialJobRequest"})) == 8
	}, 10*time.Second, 10*time.Millisecond, "both shards did not reach the availability stage")
	var victimShard int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT (args ->> 'shard')::int FROM batch_runner.river_job
		WHERE kind = 'run_batch_shard' AND attempted_by[1] = 'victim'`).Scan(&victimShard), "the victim works a shard")
	victim.kill(t)

	done := waitDone(t, survivor.base, jobID, 60*time.Second)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	b := getSharded(t, survivor.base, done.ID)
	requireCounts(t, map[string]int{"completed": 8}, b.batchView) // every executor judged once
	require.Len(t, b.Jobs, 8)
	require.Equal(t, 2, b.Shards[victimShard].Attempt, "the retry took the killed shard over")
	require.Equal(t, 1, b.Shards[1-victimShard].Attempt)
	requireScoredOnce(t, pool, fleet, b.ID)
	late := map[sysevent.Subtype]int{}
	for _, e := range b.Events {
		late[e.Subtype]++
	}
	require.Equal(t, 1, late[sysevent.ShardNotReady], "the survivor went on without the killed shard")
	require.Equal(t, 2, late[sysevent.ShardLate], "the retry offered and sent late")
	require.Equal(t, map[string]int{
		"batch_runner.batch_jobs": 8, "batch_runner.batch_manifests": 4, "batch_runner.batch_receipts": 24, "scorer.river_job": 1,
	}, resultRows(t, pool))
}
