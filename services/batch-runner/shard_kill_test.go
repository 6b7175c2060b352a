package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/servicetest"
)

// TestKilledShardRetriesOnce runs a two-shard batch on two processes, one shard each, and
// SIGKILLs one of them during the spin-up, with the job timeout and the lease at their defaults.
// The surviving shard waits SHARD_WAIT for the dead one, goes on alone and writes its results;
// the batch stays running. Once the dead shard's lease has run out, the survivor's sweep hands
// the shard to a new run_batch_shard job (a LEASE_EXPIRED event naming the default lease), which
// takes the shard over (attempt 2), sends late, writes its results once, and ends the batch with
// one score_batch. The dead job itself is given back by the liveness sweep and ends having run
// nothing.
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
	var victimJob int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT id, (args ->> 'shard')::int FROM batch_runner.river_job
		WHERE kind = 'run_batch_shard' AND attempted_by[1] = 'victim'`).Scan(&victimJob, &victimShard), "the victim works a shard")
	killed := time.Now()
	victim.kill(t)

	done := waitDone(t, survivor.base, jobID, 3*time.Minute)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	b := getSharded(t, survivor.base, done.ID)
	requireCounts(t, map[string]int{"completed": 8}, b.batchView) // every executor judged once
	require.Len(t, b.Jobs, 8)
	require.Equal(t, 2, b.Shards[victimShard].Attempt, "the retry took the killed shard over")
	require.Equal(t, 1, b.Shards[1-victimShard].Attempt)
	requireScoredOnce(t, pool, fleet, b.ID)
	e := requireTakenOverByLease(t, pool, b.ID, victimJob, killed, "run_batch_shard")
	require.Equal(t, &victimShard, e.Shard, "the killed shard was taken over")
	require.Equal(t, e.Data.TakenOverBy, b.Shards[victimShard].RiverJobID, "by the job the sweep inserted")
	require.Equal(t, 1.0, servicetest.Value(t, servicetest.Metrics(t, survivor.base), "drover_batch_runner_lease_takeovers_total",
		map[string]string{"of": "shard"}), "the survivor's sweeper took it over")
	late := map[sysevent.Subtype]int{}
	for _, e := range b.Events {
		late[e.Subtype]++
	}
	require.Equal(t, 1, late[sysevent.ShardNotReady], "the survivor went on without the killed shard")
	require.Equal(t, 2, late[sysevent.ShardLate], "the takeover offered and sent late")
	require.Equal(t, map[string]int{
		"batch_runner.batch_jobs": 8, "batch_runner.batch_manifests": 4, "batch_runner.batch_receipts": 24, "scorer.river_job": 1,
	}, resultRows(t, pool))
}
