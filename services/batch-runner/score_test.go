package main

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/queue"
	"drover.dev/shared/testdb"
)

// TestShardedAndUnshardedScoreAlike runs the same miners as one batch and as a batch of two
// shards, each on its own database, and requires the same score_batch totals of both: scorer
// cannot tell how a batch was run. Miner 1 declines busy and miner 2 answers wrong, so every
// count (completed, excused, failed) is exercised.
func TestShardedAndUnshardedScoreAlike(t *testing.T) {
	t.Parallel()
	whole, sharded := testdb.New(t), testdb.New(t)
	wholePool, shardedPool := testdb.NewPoolFor(t, whole), testdb.NewPoolFor(t, sharded)
	fleet := startFleet(t, wholePool, minersim.Config{
		Miners: 4, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 2}}, SpinUp: 20 * time.Millisecond,
		Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{
			1: {Decline: minersim.DeclineBusyValid},
			2: {Answer: minersim.AnswerWrong},
		}},
	})
	listFleet(t, shardedPool, fleet)
	// Busy declines carry receipts the fleet signs on the spot: room for a loaded -race run.
	spinUps := map[string]time.Duration{"*": 1500 * time.Millisecond}

	wholeCfg := testConfig(whole)
	wholeCfg.SpinUps = spinUps
	_, wholeScore := scoreOneBatch(t, wholeCfg, wholePool)

	shardedCfg := shardConfig(sharded, 2, 10*time.Second)
	shardedCfg.SpinUps = spinUps
	base, shardedScore := scoreOneBatch(t, shardedCfg, shardedPool)
	require.Equal(t, 2, getSharded(t, base, shardedScore.BatchID).ShardCount)

	require.Len(t, wholeScore.Miners, 4)
	require.Equal(t, wholeScore.Miners, shardedScore.Miners)
	require.Equal(t, wholeScore.Peak, shardedScore.Peak)
	counts := queue.MinerClassResult{}
	for _, r := range wholeScore.Miners {
		counts.Completed, counts.Excused, counts.Failed = counts.Completed+r.Completed, counts.Excused+r.Excused, counts.Failed+r.Failed
	}
	require.Equal(t, queue.MinerClassResult{Completed: 4, Excused: 2, Failed: 2}, counts)
}

// scoreOneBatch runs one batch on a service started with cfg and returns the service's address
// and the batch's score_batch args.
func scoreOneBatch(t *testing.T, cfg Config, pool *pgxpool.Pool) (string, queue.ScoreBatchArgs) {
	t.Helper()
	base := startService(t, cfg)
	b := waitDone(t, base, enqueueBatch(t, base), 30*time.Second)
	require.Equal(t, "done", b.State, "error: %v", b.Error)
	scores := scoreJobs(t, pool)
	require.Len(t, scores, 1, "exactly one score_batch job for scorer")
	require.Equal(t, b.ID, scores[0].BatchID)
	return base, scores[0]
}
