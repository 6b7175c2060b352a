package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// uiBundle is a scheduler and an x86_64-linux worker on a fresh database, the worker's log lines,
// and a River client on the scheduler's schema to press River UI's buttons with (River UI calls
// the same methods).
type uiBundle struct {
	base   string
	pool   *pgxpool.Pool
	river  *queue.Client
	logs   *queuetest.UIActionLog
	worker string
}

func setupUI(t *testing.T) (*uiBundle, context.Context) {
	t.Helper()
	dbURL := testdb.New(t)
	b := &uiBundle{base: startScheduler(t, testConfig(t, dbURL)), pool: testdb.NewPoolFor(t, dbURL), logs: &queuetest.UIActionLog{}}
	cfg := workerConfig(t, dbURL, "x86_64-linux")
	cfg.LogLevel, cfg.LogFormat = "info", "json"
	b.worker = servicetest.Start(t, func(ctx context.Context, ln net.Listener, _ io.Writer) error {
		return runWorker(ctx, cfg, ln, b.logs)
	})
	var err error
	b.river, err = queue.NewInserter(b.pool, queue.BuildScheduler)
	require.NoError(t, err)
	return b, context.Background()
}

func (b *uiBundle) submit(t *testing.T, sub dag.Submission) int64 {
	t.Helper()
	var g jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, b.base+"/v1/groups", sub, &g))
	return g.ID
}

// waitState polls group id until it is in state and returns it.
func (b *uiBundle) waitState(t *testing.T, id int64, state jobgraph.GroupState) jobgraph.Group {
	t.Helper()
	var g jobgraph.Group
	require.Eventually(t, func() bool {
		g = jobgraph.Group{}
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d", b.base, id), nil, &g))
		return g.State == state
	}, 20*time.Second, 20*time.Millisecond, "group %d never became %s", id, state)
	return g
}

// events returns group id's events, oldest first, as "kind: message".
func (b *uiBundle) events(t *testing.T, id int64) []string {
	t.Helper()
	var page struct{ Items []jobgraph.Event }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/events", b.base, id), nil, &page))
	var out []string
	for i := len(page.Items) - 1; i >= 0; i-- {
		out = append(out, string(page.Items[i].Kind)+": "+page.Items[i].Message)
	}
	return out
}

// token returns the build_run token whose output names build job name, waiting for it to end.
func (b *uiBundle) token(ctx context.Context, t *testing.T, name string) *rivertype.JobRow {
	t.Helper()
	var id int64
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(ctx, `SELECT id FROM build_scheduler.river_job
			WHERE kind = 'build_run' AND finalized_at IS NOT NULL AND metadata->'output'->'build'->>'name' = $1`, name).Scan(&id)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "no token ended with build %s", name)
	return b.job(ctx, t, id)
}

func (b *uiBundle) job(ctx context.Context, t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	row, err := b.river.JobGet(ctx, id)
	require.NoError(t, err)
	return row
}

// waitEnded waits until token id has ended attempt and returns it.
func (b *uiBundle) waitEnded(ctx context.Context, t *testing.T, id int64, attempt int) *rivertype.JobRow {
	t.Helper()
	var row *rivertype.JobRow
	require.Eventually(t, func() bool {
		row = b.job(ctx, t, id)
		return row.Attempt == attempt && row.FinalizedAt != nil
	}, 20*time.Second, 20*time.Millisecond, "token %d never ended attempt %d", id, attempt)
	return row
}

// River UI's Retry on the discarded token of a failed build, once the build's cause is fixed,
// runs the build again: its dependents wait again, the group leaves failed and completes, the
// token ends completed with the build, and the job graph's events and the worker's log say so.
// Retry on that completed token then builds nothing and ends cancelled, naming the route to use.
func TestRiverUIRetryRebuildsAFailedBuild(t *testing.T) {
	t.Parallel()
	b, ctx := setupUI(t)
	fixed := filepath.Join(t.TempDir(), "fixed")
	g := b.submit(t, dag.Submission{Name: "docs", Jobs: []dag.JobSpec{
		sh("docs-build", fmt.Sprintf(`[ -e %q ] || { echo broken >&2; exit 2; }`, fixed)),
		sh("publish", "true", "docs-build"), sh("aside", "true"),
	}})
	failed := b.waitState(t, g, jobgraph.GroupFailed)
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.Complete: 1, jobgraph.JobFailed: 1, jobgraph.DependencyFailed: 1}, failed.Counts)
	token := b.token(ctx, t, "docs-build")
	require.Equal(t, rivertype.JobStateDiscarded, token.State)
	require.Empty(t, b.logs.UIActions(t))

	require.NoError(t, os.WriteFile(fixed, nil, 0o600))
	_, err := b.river.JobRetry(ctx, token.ID)
	require.NoError(t, err)
	done := b.waitState(t, g, jobgraph.GroupComplete)
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.Complete: 3}, done.Counts)
	token = b.waitEnded(ctx, t, token.ID, 2)
	require.Equal(t, rivertype.JobStateCompleted, token.State, "the retried token carried the rebuild")
	var out struct {
		Build struct{ Name, Outcome string }
	}
	require.NoError(t, json.Unmarshal(token.Output(), &out))
	require.Equal(t, "docs-build", out.Build.Name)
	require.Equal(t, "succeeded", out.Build.Outcome)

	events := b.events(t, g)
	require.Len(t, events, 2)
	require.Contains(t, events[0], "job_failed: job")
	require.Contains(t, events[1], fmt.Sprintf("river_ui_action: River UI retry of build_run token %d", token.ID))
	require.Contains(t, events[1], "runs again with 1 dependents")
	require.Contains(t, events[1], "the group is open again")
	actions := b.logs.UIActions(t)
	require.Len(t, actions, 1)
	require.Equal(t, []any{"build_run", token.ID, "retry"}, []any{actions[0].Kind, actions[0].JobID, actions[0].Action})
	require.Contains(t, actions[0].Did, "runs again")
	require.Contains(t, b.builds(t), "docs-build:failed", "the build ran, and its line says so")
	require.Contains(t, b.builds(t), "docs-build:succeeded")

	_, err = b.river.JobRetry(ctx, token.ID)
	require.NoError(t, err)
	token = b.waitEnded(ctx, t, token.ID, 3)
	require.Equal(t, rivertype.JobStateCancelled, token.State, "nothing to run again: not completed")
	require.Contains(t, token.Errors[len(token.Errors)-1].Error, "already succeeded")
	require.Contains(t, token.Errors[len(token.Errors)-1].Error, "POST /v1/groups")
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.Complete: 3}, b.waitState(t, g, jobgraph.GroupComplete).Counts)
	events = b.events(t, g)
	require.Len(t, events, 3)
	require.Contains(t, events[2], "already succeeded")
	require.Len(t, b.logs.UIActions(t), 2)
}

// River UI's Cancel on the token of a running build kills the build's process and records the
// job cancelled, with its dependent, in the transaction that ends the token cancelled; the job
// graph's events and the worker's log say so, and the group ends canceled.
func TestRiverUICancelKillsARunningBuild(t *testing.T) {
	t.Parallel()
	b, ctx := setupUI(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	g := b.submit(t, dag.Submission{Name: "slow", Jobs: []dag.JobSpec{
		sh("slow", fmt.Sprintf(`echo $$ > %q; exec sleep 60`, pidFile)), sh("after", "true", "slow"), sh("aside", "true"),
	}})
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(pidFile)
		if err != nil || !bytes.HasSuffix(data, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		require.NoError(t, err)
		return true
	}, 20*time.Second, 20*time.Millisecond, "the build never started")
	// aside ran beside it; once it is complete, the one running token is slow's.
	b.waitCounts(t, g, map[jobgraph.JobState]int{jobgraph.Running: 1, jobgraph.Waiting: 1, jobgraph.Complete: 1})
	var id int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM build_scheduler.river_job WHERE kind = 'build_run' AND state = 'running'`).Scan(&id))

	_, err := b.river.JobCancel(ctx, id)
	require.NoError(t, err)
	canceled := b.waitState(t, g, jobgraph.GroupCanceled)
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.CancelComplete: 2, jobgraph.Complete: 1}, canceled.Counts)
	require.False(t, alive(pid), "the build's process was killed")
	token := b.waitEnded(ctx, t, id, 1)
	require.Equal(t, rivertype.JobStateCancelled, token.State)
	require.Contains(t, token.Errors[len(token.Errors)-1].Error, "build slow")

	events := b.events(t, g)
	require.Len(t, events, 1)
	require.Contains(t, events[0], fmt.Sprintf("river_ui_action: River UI cancel of build_run token %d: killed build slow", id))
	actions := b.logs.UIActions(t)
	require.Len(t, actions, 1)
	require.Equal(t, "cancel", actions[0].Action)
	require.Contains(t, actions[0].Did, "killed build slow")
}

// waitCounts polls group id until its jobs' counts by state are want.
func (b *uiBundle) waitCounts(t *testing.T, id int64, want map[jobgraph.JobState]int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var g jobgraph.Group
		require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d", b.base, id), nil, &g))
		return fmt.Sprint(g.Counts) == fmt.Sprint(want)
	}, 20*time.Second, 20*time.Millisecond, "group %d never had counts %v", id, want)
}

// A ready job whose only token is lost is built all the same, through a token the reaper issues
// after TOKEN_GRACE: a token its worker died holding before it claimed (River shows it running),
// one cancelled in River UI before it ran, or one deleted there.
func TestLostTokenIsReissued(t *testing.T) {
	t.Parallel()
	for name, lose := range map[string]func(context.Context, *testing.T, *pgxpool.Pool, *queue.Client, int64){
		"DiedHoldingIt": func(ctx context.Context, t *testing.T, pool *pgxpool.Pool, _ *queue.Client, _ int64) {
			t.Helper()
			jobs := queuetest.FetchAsDeadProcess(ctx, t, pool, queue.BuildScheduler.Schema(), queue.BuildQueue("lost-token"), "dead-worker", 10)
			require.Len(t, jobs, 1)
		},
		"CancelledInRiverUI": func(ctx context.Context, t *testing.T, _ *pgxpool.Pool, client *queue.Client, id int64) {
			t.Helper()
			row, err := client.JobCancel(ctx, id)
			require.NoError(t, err)
			require.Equal(t, rivertype.JobStateCancelled, row.State)
		},
		"DeletedInRiverUI": func(ctx context.Context, t *testing.T, _ *pgxpool.Pool, client *queue.Client, id int64) {
			t.Helper()
			_, err := client.JobDelete(ctx, id)
			require.NoError(t, err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := testdb.New(t)
			cfg := testConfig(t, dbURL)
			cfg.TokenGrace = time.Second
			base := startScheduler(t, cfg)
			var g jobgraph.Group
			job := dag.JobSpec{Name: "orphan", Target: "lost-token", Command: []string{"true"}}
			require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", dag.Submission{Name: "lost-token", Jobs: []dag.JobSpec{job}}, &g))
			pool := testdb.NewPoolFor(t, dbURL)
			client, err := queue.NewInserter(pool, queue.BuildScheduler)
			require.NoError(t, err)
			var first int64
			require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM build_scheduler.river_job WHERE kind = 'build_run'`).Scan(&first))
			lose(ctx, t, pool, client, first)

			startWorker(t, dbURL, "lost-token")
			require.Equal(t, jobgraph.GroupComplete, waitGroup(t, base, g.ID).State)
			var builder int64
			require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM build_scheduler.river_job
				WHERE kind = 'build_run' AND state = 'completed' AND metadata->'output'->'build'->>'name' = 'orphan'`).Scan(&builder))
			require.NotEqual(t, first, builder, "a reissued token carried the build")
		})
	}
}

// builds returns the worker's "build ran" lines as "name:outcome".
func (b *uiBundle) builds(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, line := range b.logs.Lines(t) {
		if line["msg"] == "build ran" {
			out = append(out, fmt.Sprintf("%s:%s", line["name"], line["outcome"]))
		}
	}
	return out
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}
