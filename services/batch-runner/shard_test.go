package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// shardedView is the part of GET /v1/batches/{id} these tests read of a sharded batch.
type shardedView struct {
	batchView
	ShardCount int        `json:"shard_count"`
	OfferAt    *time.Time `json:"offer_at"`
	SendAt     *time.Time `json:"send_at"`
	Shards     []struct {
		Shard        int        `json:"shard"`
		State        string     `json:"state"`
		Attempt      int        `json:"attempt"`
		RiverJobID   int64      `json:"river_job_id"`
		Miners       int        `json:"miners"`
		OfferReadyAt *time.Time `json:"offer_ready_at"`
		ReadyAt      *time.Time `json:"ready_at"`
		ReleasedAt   *time.Time `json:"released_at"`
		ReleaseLagUS *int64     `json:"release_lag_us"`
		ClockSkewUS  *int64     `json:"clock_skew_us"`
	} `json:"shards"`
	Events []struct {
		Shard   *int             `json:"shard"`
		Subtype sysevent.Subtype `json:"subtype"`
	} `json:"events"`
}

func getSharded(t *testing.T, base string, id int64) shardedView {
	t.Helper()
	var v shardedView
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, id), nil, &v))
	return v
}

// shardConfig is testConfig with batches of more than two miners split into shards of two, and
// perProcess shard slots per process. The spin-up is the miners' time to answer the initial
// request: room for a loaded -race run with two instances and a fleet in one process, where an
// accept came up to ~400 ms after its offer.
func shardConfig(dbURL string, perProcess int, wait time.Duration) Config {
	cfg := testConfig(dbURL)
	cfg.ShardMiners, cfg.ShardWorkers, cfg.ShardWait = 2, perProcess, wait
	cfg.SpinUps = map[string]time.Duration{"*": 2 * time.Second}
	return cfg
}

// shardFleet returns a fresh database listing a fleet of four miners of two executors each.
func shardFleet(t *testing.T) (string, *pgxpool.Pool, *minersim.Fleet) {
	t.Helper()
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	fleet := startFleet(t, pool, minersim.Config{
		Miners: 4, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 2}}, SpinUp: 20 * time.Millisecond,
	})
	return dbURL, pool, fleet
}

// requireScoredOnce checks the one score_batch job of batch id: every miner's two executors
// completed.
func requireScoredOnce(t *testing.T, pool *pgxpool.Pool, fleet *minersim.Fleet, id int64) {
	t.Helper()
	scores := scoreJobs(t, pool)
	require.Len(t, scores, 1, "exactly one score_batch job for scorer")
	require.Equal(t, id, scores[0].BatchID)
	require.Len(t, scores[0].Miners, len(fleet.Miners()))
	for _, r := range scores[0].Miners {
		require.Equal(t, queue.MinerClassResult{Hotkey: r.Hotkey, ExecutorClass: "always_on.test", Executors: 2, Completed: 2}, r)
	}
}

// TestShardedBatchOnTwoReplicas runs a batch of four miners as two shards on two service
// instances on one database, each with one shard slot, so each instance works one shard: the
// shards agree one send instant through Postgres, each opens its gate at it, and the last to
// finish ends the batch and enqueues score_batch once. River UI's Retry on a shard's job
// afterwards runs nothing.
func TestShardedBatchOnTwoReplicas(t *testing.T) {
	t.Parallel()
	dbURL, pool, fleet := shardFleet(t)
	cfg := shardConfig(dbURL, 1, 10*time.Second)
	base := startService(t, cfg)
	startService(t, cfg)

	jobID := enqueueBatch(t, base)
	done := waitDone(t, base, jobID, 30*time.Second)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	b := getSharded(t, base, done.ID)
	require.Equal(t, 4, b.Miners)
	requireCounts(t, map[string]int{"completed": 8}, b.batchView) // every executor judged
	require.Equal(t, 2, b.ShardCount)
	require.NotNil(t, b.SendAt)
	requireOneRelease(t, b)
	requireScoredOnce(t, pool, fleet, b.ID)

	var clients int
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT count(DISTINCT attempted_by[1]) FROM batch_runner.river_job WHERE kind = 'run_batch_shard'`).Scan(&clients))
	require.Equal(t, 2, clients, "each replica worked one shard")

	before := resultRows(t, pool)
	retryShard(t, pool, b.ID)
	require.Equal(t, before, resultRows(t, pool), "a shard job retried in River UI writes nothing")
	require.Len(t, scoreJobs(t, pool), 1)
	require.Equal(t, 1, getSharded(t, base, b.ID).Shards[0].Attempt)
	require.Equal(t, []string{"1/RETRY_REFUSED"}, riverJobEvents(t, base, b.ID))
}

// requireOneRelease checks the order of a batch whose shards met at both instants: both shards
// were ready to offer before the agreed offer instant, and every initial request went out after
// it; both were ready to send before the agreed send instant, opened their gates at it, not
// before, and every job request went out after it; and no shard waited for the other past the
// wait or came late (no ShardNotReady, no ShardLate). How soon after the instants the requests
// went out is the hot phase's benchmark, logged here, not asserted.
func requireOneRelease(t *testing.T, b shardedView) {
	t.Helper()
	require.NotNil(t, b.OfferAt)
	require.NotNil(t, b.SendAt)
	require.Len(t, b.Shards, 2)
	for _, s := range b.Shards {
		require.Equal(t, "done", s.State)
		require.Equal(t, 2, s.Miners)
		require.NotNil(t, s.OfferReadyAt)
		require.False(t, s.OfferReadyAt.After(*b.OfferAt), "shard %d ready to offer after offer_at", s.Shard)
		require.NotNil(t, s.ReadyAt)
		require.False(t, s.ReadyAt.After(*b.SendAt), "shard %d ready to send after send_at", s.Shard)
		require.NotNil(t, s.ClockSkewUS)
		require.NotNil(t, s.ReleaseLagUS, "shard %d released", s.Shard)
		require.GreaterOrEqual(t, *s.ReleaseLagUS, int64(0), "shard %d opened before send_at", s.Shard)
	}
	for _, e := range b.Events {
		require.NotContains(t, []sysevent.Subtype{sysevent.ShardNotReady, sysevent.ShardLate}, e.Subtype,
			"shard %v: both shards met both instants", e.Shard)
	}
	var offerLag time.Duration
	var first, last time.Time
	for _, j := range b.Jobs {
		require.NotNil(t, j.InitialSentAt)
		require.False(t, j.InitialSentAt.Before(*b.OfferAt), "an initial request left before offer_at")
		offerLag = max(offerLag, j.InitialSentAt.Sub(*b.OfferAt))
		require.NotNil(t, j.BeforeSendAt)
		require.False(t, j.BeforeSendAt.Before(*b.SendAt), "a job request left before send_at")
		if first.IsZero() || j.BeforeSendAt.Before(first) {
			first = *j.BeforeSendAt
		}
		if j.AfterSendAt.After(last) {
			last = *j.AfterSendAt
		}
	}
	t.Logf("initial requests by %s after offer_at; release lag shard 0 %d µs, shard 1 %d µs; batch send spread %s",
		offerLag, *b.Shards[0].ReleaseLagUS, *b.Shards[1].ReleaseLagUS, last.Sub(first))
}

// retryShard presses River UI's Retry on shard 0's completed job and waits until a replica has
// worked it: the shard has finished, so it runs nothing and ends cancelled, naming the route that
// runs a new batch.
func retryShard(t *testing.T, pool *pgxpool.Pool, batchID int64) {
	t.Helper()
	ctx := context.Background()
	var jobID int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM batch_runner.river_job
		WHERE kind = 'run_batch_shard' AND (args ->> 'batch_id')::bigint = $1 AND (args ->> 'shard')::int = 0`, batchID).Scan(&jobID))
	ui := riverUI(t, pool)
	_, err := ui.JobRetry(ctx, jobID)
	require.NoError(t, err)
	job := waitJob(t, ui, jobID, rivertype.JobStateCancelled)
	require.Contains(t, lastError(t, job), fmt.Sprintf("shard 0 of batch %d is done", batchID))
	require.Contains(t, lastError(t, job), "use POST /v1/batches to run a new batch")
}

// TestShardNotReadyHoldsNobody runs a two-shard batch on one instance with one shard slot:
// shard 1 cannot start before shard 0 has finished. Shard 0 waits the configured time for it to
// agree the stagger's start, then fixes it alone and says so; it does not wait for shard 1 again
// to send. Shard 1 runs afterwards, finds both instants past, goes on at once and says so; the
// batch ends, scored once, with every executor judged.
func TestShardNotReadyHoldsNobody(t *testing.T) {
	t.Parallel()
	dbURL, pool, fleet := shardFleet(t)
	const wait = time.Second
	base := startService(t, shardConfig(dbURL, 1, wait))

	jobID := enqueueBatch(t, base)
	done := waitDone(t, base, jobID, 30*time.Second)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	b := getSharded(t, base, done.ID)
	requireCounts(t, map[string]int{"completed": 8}, b.batchView)
	requireScoredOnce(t, pool, fleet, b.ID)

	shards := map[sysevent.Subtype][]int{}
	for _, e := range b.Events {
		if e.Subtype == sysevent.ShardNotReady || e.Subtype == sysevent.ShardLate {
			require.NotNil(t, e.Shard)
			shards[e.Subtype] = append(shards[e.Subtype], *e.Shard)
		}
	}
	require.Len(t, shards[sysevent.ShardNotReady], 1, "the first shard went on without the other, once")
	first := shards[sysevent.ShardNotReady][0]
	require.Equal(t, []int{1 - first, 1 - first}, shards[sysevent.ShardLate], "the other came late to both instants")
	require.GreaterOrEqual(t, b.OfferAt.Sub(*b.Shards[first].OfferReadyAt), wait, "the first shard waited")
	// It held nobody: both instants were fixed before the other shard was ready for them.
	other := b.Shards[1-first]
	require.True(t, b.OfferAt.Before(*other.OfferReadyAt), "offer_at fixed before shard %d was ready to offer", other.Shard)
	require.True(t, b.SendAt.Before(*other.ReadyAt), "send_at fixed before shard %d was ready to send", other.Shard)
}
