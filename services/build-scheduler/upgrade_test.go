package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"drover.dev/migrations"
	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// earlierArgs are the args of a build_run River job of the release before builds were River
// jobs: they name the job whose becoming ready inserted it, and no attempt.
type earlierArgs struct {
	Target  string `json:"target"`
	GroupID int64  `json:"group_id"`
	JobID   int64  `json:"job_id"`
	JobName string `json:"job_name"`
}

func (earlierArgs) Kind() string { return "build_run" }

// TestUpgradeFinishesGroupsInFlight upgrades a database that an earlier release left mid-group
// (migration 00005): a job running under a lease its dead worker held, a ready job with that
// release's build_run River job queued, and a job waiting on it. After the migrations, the scheduler's reaper
// gives the running and the ready job River jobs of their own, as new attempts; a worker of this
// release builds the group to its end and ends the earlier release's River job cancelled,
// naming no build.
func TestUpgradeFinishesGroupsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.New(t)
	logger := slog.New(slog.DiscardHandler)
	require.NoError(t, migrations.DownTo(ctx, dbURL, queue.BuildScheduler, 5, logger))
	pool := testdb.NewPoolFor(t, dbURL)

	// What the earlier release wrote, in its schema: a group of three jobs, "a" running under a
	// lease at attempt 1, "b" ready with its River job, "c" waiting on "b".
	var group int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO build_scheduler.groups (name, remaining, state)
		VALUES ('in-flight', 3, 'dispatching') RETURNING id`).Scan(&group))
	_, err := pool.Exec(ctx, `INSERT INTO build_scheduler.job_graph (id, group_id, name, target, state, command, timeout_ms,
			dependencies, dependents, waiting_on_count, attempt, max_attempts, lease_token, lease_expires_at, worker_id)
		VALUES (901, $1, 'a', 'upgrade', 'running', '{true}', 60000, '{}', '{}', 0, 1, 3, 7, now() + interval '1 minute', 'old-worker'),
			(902, $1, 'b', 'upgrade', 'ready', '{true}', 60000, '{}', '{903}', 0, 0, 3, NULL, NULL, NULL),
			(903, $1, 'c', 'upgrade', 'waiting_on_dependency', '{true}', 60000, '{902}', '{}', 1, 0, 3, NULL, NULL, NULL)`, group)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO build_scheduler.group_stripes (group_id, stripe, remaining)
		SELECT $1, s, CASE WHEN s IN (901 % 64, 902 % 64, 903 % 64) THEN 1 ELSE 0 END FROM generate_series(0, 63) s`, group)
	require.NoError(t, err)
	client, err := queue.NewInserter(pool, queue.BuildScheduler)
	require.NoError(t, err)
	earlier, err := client.Insert(ctx, earlierArgs{Target: "upgrade", GroupID: group, JobID: 902, JobName: "b"},
		&river.InsertOpts{Queue: queue.BuildQueue("upgrade"), MaxAttempts: 25})
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, dbURL, logger))
	base := startScheduler(t, testConfig(t, dbURL))
	startWorker(t, dbURL, "upgrade")

	final := waitGroup(t, base, group)
	require.Equal(t, jobgraph.GroupComplete, final.State)
	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, group), nil, &jobs))
	attempts := map[string]int{}
	for _, j := range jobs.Items {
		attempts[j.Name] = j.Attempt
	}
	require.Equal(t, map[string]int{"a": 2, "b": 1, "c": 1}, attempts, "the running job's lost attempt counts")
	require.Eventually(t, func() bool {
		row, err := client.JobGet(ctx, earlier.Job.ID)
		require.NoError(t, err)
		return row.FinalizedAt != nil
	}, 20*time.Second, 20*time.Millisecond, "the earlier release's River job was never worked")
	row, err := client.JobGet(ctx, earlier.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", string(row.State))
	require.Contains(t, row.Errors[len(row.Errors)-1].Error, "an earlier release, which names no attempt")
}
