package main

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/shared/testdb"
)

// TestAttemptThatLostItsLeaseWritesNothing hands a running batch's lease to another job, as a
// replica's sweeper does when the lease of a process cut off from the database runs out. The
// process, alive, finds out at its next renewal: it stops the batch and ends its job cancelled,
// saying so, and writes nothing: the batch row stays as the takeover found it.
func TestAttemptThatLostItsLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	startFleet(t, pool, minersim.Config{
		Miners: 2, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond,
	})
	cfg := testConfig(dbURL)
	cfg.SpinUps = map[string]time.Duration{"*": time.Minute} // the batch waits in the availability stage
	cfg.Lease = 2 * time.Second                              // renewed every 500 ms
	cfg.LeaseSweep = time.Hour                               // this test takes the batch over itself
	base := startService(t, cfg)
	jobID := enqueueBatch(t, base)
	v := currentProgress(t, base, func(v batch.ProgressView) bool { return v.JobID == jobID && v.Stage == "availability" })

	const other = 1 << 40
	_, err := pool.Exec(context.Background(), `UPDATE batch_runner.batches SET lease_job_id = $2 WHERE id = $1`, v.BatchID, other)
	require.NoError(t, err)
	job := waitJob(t, riverUI(t, pool), jobID, rivertype.JobStateCancelled)
	require.Contains(t, lastError(t, job), "lost its lease")

	var state string
	var attempt int
	var leaseJob int64
	var events int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT state, attempt, lease_job_id,
		(SELECT count(*) FROM batch_runner.batch_events e WHERE e.batch_id = b.id)
		FROM batch_runner.batches b WHERE id = $1`, v.BatchID).Scan(&state, &attempt, &leaseJob, &events))
	require.Equal(t, "running", state, "the job it was handed to runs it, not this attempt")
	require.Equal(t, 1, attempt)
	require.Equal(t, int64(other), leaseJob)
	require.Zero(t, events, "not even its events")
	require.Equal(t, map[string]int{
		"batch_runner.batch_jobs": 0, "batch_runner.batch_manifests": 0, "batch_runner.batch_receipts": 0, "scorer.river_job": 0,
	}, resultRows(t, pool))
}
