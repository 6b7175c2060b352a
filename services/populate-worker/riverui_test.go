package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// These tests press River UI's buttons as River UI does: River's JobRetry, JobCancel and
// JobDelete, on a client of the service's schema.

// startLogged starts cfg with info logs in JSON into a buffer it returns with the base URL.
func startLogged(t *testing.T, cfg Config) (string, *queuetest.UIActionLog) {
	t.Helper()
	logs := &queuetest.UIActionLog{}
	cfg.LogLevel, cfg.LogFormat = "info", "json"
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, _ io.Writer) error {
		return runTest(ctx, cfg, ln, logs)
	})
	return base, logs
}

// riverJob is what the tests read of a River job.
type riverJob struct {
	State     string
	LastError string
	Output    map[string]any
}

func readRiverJob(t *testing.T, pool *pgxpool.Pool, id int64) riverJob {
	t.Helper()
	var j riverJob
	var out []byte
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT state::text,
		coalesce(errors[array_upper(errors, 1)] ->> 'error', ''), coalesce(metadata -> 'output', 'null')
		FROM populate_worker.river_job WHERE id = $1`, id).Scan(&j.State, &j.LastError, &out))
	require.NoError(t, json.Unmarshal(out, &j.Output))
	return j
}

// waitState waits for River job id to reach state and returns it.
func waitState(t *testing.T, pool *pgxpool.Pool, id int64, state string) riverJob {
	t.Helper()
	var j riverJob
	require.Eventually(t, func() bool {
		j = readRiverJob(t, pool, id)
		return j.State == state
	}, 20*time.Second, 20*time.Millisecond, "job %d to be %s", id, state)
	return j
}

// TestRiverUIRetryOfAFailedMakeMakesItsKey is what operators saw lying: a make raised
// "ValueError: signal N has no samples", its River job was discarded, the signal was fixed, and
// Retry turned the job Completed while the key stayed error and no make ran. Retry now makes the
// key again: its error cleared, a new reservation, the make, and the key's success, its target
// row and the River job's completion in one transaction. A second Retry, the key made, ends the
// job cancelled naming what to do instead.
func TestRiverUIRetryOfAFailedMakeMakesItsKey(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	cfg := Config{Common: servicetest.Config(dbURL), Examples: true, ExamplesSeed: true,
		Settings: wiring.Settings{MakeWorkers: 2, MinSchedulingInterval: 200 * time.Millisecond, KeepSuccess: true}}
	base, logs := startLogged(t, cfg)
	pool := testdb.NewPoolFor(t, dbURL)
	ctx := context.Background()
	var seed struct {
		EmptyIDs []int64 `json:"empty_ids"`
	}
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/examples/seed",
		map[string]int{"signals": 2, "empty": 1}, &seed))
	type jobView struct {
		KeyHash      string          `json:"key_hash"`
		Status       string          `json:"status"`
		ErrorMessage *string         `json:"error_message"`
		RunMetadata  json.RawMessage `json:"run_metadata"`
	}
	var page struct{ Items []jobView }
	require.Eventually(t, func() bool {
		servicetest.Call(t, http.MethodGet, base+"/v1/jobs?table=example_signal_stats&status=error", nil, &page)
		return len(page.Items) == 1
	}, 20*time.Second, 50*time.Millisecond, "the empty signal's make fails")
	hash := page.Items[0].KeyHash
	require.Contains(t, *page.Items[0].ErrorMessage, "has no samples")
	var id int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM populate_worker.river_job WHERE kind = 'populate_make'
		AND args ->> 'table' = 'example_signal_stats' AND args ->> 'key_hash' = $1`, hash).Scan(&id))
	job := waitState(t, pool, id, "discarded")
	require.Equal(t, "error", job.Output["outcome"])

	_, err := pool.Exec(ctx, `UPDATE populate_worker.example_signal SET samples = '{1, 2, 3}' WHERE signal_id = $1`, seed.EmptyIDs[0])
	require.NoError(t, err)
	client, err := queue.NewInserter(pool, queue.PopulateWorker)
	require.NoError(t, err)
	_, err = client.JobRetry(ctx, id)
	require.NoError(t, err)
	job = waitState(t, pool, id, "completed")
	require.Equal(t, "made", job.Output["outcome"])
	require.Equal(t, true, job.Output["revived_from_error"])
	var got jobView
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/v1/jobs/example_signal_stats/"+hash, nil, &got))
	require.Equal(t, "success", got.Status, "GET /v1/jobs shows the key made")
	require.Nil(t, got.ErrorMessage)
	require.Contains(t, string(got.RunMetadata), `"retried_from_error":"ValueError: signal`, "the error it was made again from")
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM populate_worker.example_signal_stats WHERE signal_id = $1`,
		seed.EmptyIDs[0]).Scan(&rows))
	require.Equal(t, 1, rows, "the make ran and wrote its row")

	_, err = client.JobRetry(ctx, id)
	require.NoError(t, err)
	job = waitState(t, pool, id, "cancelled")
	require.Contains(t, job.LastError, "key already made in example_signal_stats; nothing to redo")
	require.Contains(t, job.LastError, "POST /v1/tables/example_signal_stats/schedule")
	require.Equal(t, "skipped", job.Output["outcome"])
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/v1/jobs/example_signal_stats/"+hash, nil, &got))
	require.Equal(t, "success", got.Status, "the made key is left as it is")

	actions := logs.WaitUIActions(t, 2)
	require.Len(t, actions, 2, "one line per press")
	for i, want := range []string{"made (its error cleared and made again)", "skipped: key already made"} {
		require.Equal(t, "populate_make", actions[i].Kind)
		require.Equal(t, id, actions[i].JobID)
		require.Equal(t, "retry", actions[i].Action)
		require.True(t, strings.HasPrefix(actions[i].Did, want), "%d: %s", i, actions[i].Did)
	}
}

// TestRiverUICancelOfARunningMakeRecordsTheInterrupt cancels a make whose HTTP function hangs: the
// request is cancelled, the key's job records the interrupt as DataJoint records Ctrl-C (status
// error, "KeyboardInterrupt: ..."), and the River job ends cancelled in the same transaction.
// Retry then makes the key.
func TestRiverUICancelOfARunningMakeRecordsTheInterrupt(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	b := setupHeld(t, 1, func(int) time.Duration {
		if calls.Add(1) == 1 {
			return -1 // the first call hangs until its caller goes away
		}
		return 0
	})
	cfg := b.config()
	cfg.MakeWorkers, cfg.FeedOff = 1, false
	_, logs := startLogged(t, cfg)
	ctx := context.Background()
	b.waitEntered(t, 1)
	ids := b.jobIDs(t, queue.PopulateMakeArgs{}.Kind(), "running")
	require.Len(t, ids, 1)
	client := b.riverClient(t)
	_, err := client.JobCancel(ctx, ids[0])
	require.NoError(t, err)

	job := waitState(t, b.pool, ids[0], "cancelled")
	require.Contains(t, job.LastError, "KeyboardInterrupt: cancelled in River UI")
	require.Equal(t, "cancelled", job.Output["outcome"])
	require.Equal(t, map[string]int{"error: KeyboardInterrupt: cancelled in River UI": 1}, b.jobMessages(t),
		"the key's job records the interrupt")
	require.Equal(t, int32(1), b.abandoned.Load(), "the function's request was cancelled")
	require.Zero(t, b.count(t, `SELECT count(*) FROM populate_worker.held_dst`))

	_, err = client.JobRetry(ctx, ids[0])
	require.NoError(t, err)
	job = waitState(t, b.pool, ids[0], "completed")
	require.Equal(t, "made", job.Output["outcome"])
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM populate_worker.held_dst`))
	require.Empty(t, b.jobMessages(t), "a made key's job is deleted")

	actions := logs.WaitUIActions(t, 2)
	require.Len(t, actions, 2, "one line per press")
	require.Equal(t, []string{"cancel", "retry"}, []string{actions[0].Action, actions[1].Action})
	require.True(t, strings.HasPrefix(actions[0].Did, "cancelled: KeyboardInterrupt: cancelled in River UI"), actions[0].Did)
	require.True(t, strings.HasPrefix(actions[1].Did, "made (its error cleared and made again)"), actions[1].Did)
}

// TestRiverUICancelOrDeleteOfAWaitingMakeGivesTheKeyBack cancels, then deletes, a make job that is
// waiting: no worker sees either, and the key, scheduled and marked enqueued, would have no job.
// The reclaim pass gives it back to the feeder, which enqueues a new make job.
func TestRiverUICancelOrDeleteOfAWaitingMakeGivesTheKeyBack(t *testing.T) {
	t.Parallel()
	b := setupHeld(t, 1, func(int) time.Duration { return 0 })
	cfg := b.config()
	cfg.MakeWorkers, cfg.FeedOff = 0, false // nothing makes the key: its make job waits
	cfg.OrphanTimeout, cfg.ReclaimEvery = 300*time.Millisecond, 50*time.Millisecond
	startLogged(t, cfg)
	ctx := context.Background()
	client := b.riverClient(t)
	waiting := func() []int64 {
		var ids []int64
		require.Eventually(t, func() bool {
			ids = b.jobIDs(t, queue.PopulateMakeArgs{}.Kind(), "available")
			return len(ids) == 1
		}, 15*time.Second, 20*time.Millisecond, "a make job waits for the key")
		return ids
	}
	first := waiting()
	_, err := client.JobCancel(ctx, first[0])
	require.NoError(t, err)
	require.Equal(t, "cancelled", readRiverJob(t, b.pool, first[0]).State, "a waiting job is cancelled at once")
	second := waiting()
	require.NotEqual(t, first, second, "a new make job")
	_, err = client.JobDelete(ctx, second[0])
	require.NoError(t, err)
	third := waiting()
	require.NotEqual(t, second, third)
	require.Equal(t, map[string]int{"scheduled": 1}, b.jobMessages(t))
}
