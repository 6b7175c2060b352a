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

// build returns the River job of attempt of build job name, waiting for it to end.
func (b *uiBundle) build(ctx context.Context, t *testing.T, name string, attempt int) *rivertype.JobRow {
	t.Helper()
	var id int64
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(ctx, `SELECT id FROM build_scheduler.river_job WHERE kind = 'build_run'
			AND finalized_at IS NOT NULL AND args->>'job_name' = $1 AND (args->>'attempt')::int = $2`, name, attempt).Scan(&id)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the River job of %s attempt %d never ended", name, attempt)
	return b.job(ctx, t, id)
}

// apiJob returns group g's job name as the API shows it.
func (b *uiBundle) apiJob(t *testing.T, g int64, name string) jobgraph.Job {
	t.Helper()
	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", b.base, g), nil, &jobs))
	for _, j := range jobs.Items {
		if j.Name == name {
			return j
		}
	}
	t.Fatalf("group %d has no job %s", g, name)
	return jobgraph.Job{}
}

func (b *uiBundle) job(ctx context.Context, t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	row, err := b.river.JobGet(ctx, id)
	require.NoError(t, err)
	return row
}

// waitEnded waits until River job id has ended River's attempt and returns it.
func (b *uiBundle) waitEnded(ctx context.Context, t *testing.T, id int64, attempt int) *rivertype.JobRow {
	t.Helper()
	var row *rivertype.JobRow
	require.Eventually(t, func() bool {
		row = b.job(ctx, t, id)
		return row.Attempt == attempt && row.FinalizedAt != nil
	}, 20*time.Second, 20*time.Millisecond, "River job %d never ended attempt %d", id, attempt)
	return row
}

// River UI's Retry on the discarded River job of a failed build, once the build's cause is fixed,
// runs the build again as a new attempt: its dependents wait again, the group leaves failed,
// attempt 2 gets a River job of its own whose args name it (every River job runs the attempt
// its args name) and completes the group, and the retried River job completes naming it. The
// API, the job graph's events and the worker's log say so. Retry on it again then builds nothing
// and ends cancelled, naming the route to use.
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
	first := b.build(ctx, t, "docs-build", 1)
	require.Equal(t, rivertype.JobStateDiscarded, first.State)
	require.Equal(t, 1, b.apiJob(t, g, "docs-build").Attempt)
	require.Empty(t, b.logs.UIActions(t))

	require.NoError(t, os.WriteFile(fixed, nil, 0o600))
	_, err := b.river.JobRetry(ctx, first.ID)
	require.NoError(t, err)
	done := b.waitState(t, g, jobgraph.GroupComplete)
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.Complete: 3}, done.Counts)
	require.Equal(t, 2, b.apiJob(t, g, "docs-build").Attempt, "the API shows the new attempt")
	second := b.build(ctx, t, "docs-build", 2)
	require.Equal(t, rivertype.JobStateCompleted, second.State, "attempt 2's River job built it")
	retried := b.waitEnded(ctx, t, first.ID, 2)
	require.Equal(t, rivertype.JobStateCompleted, retried.State, "the retry was done")
	var out struct {
		JobID      int64 `json:"job_id"`
		Attempt    int   `json:"attempt"`
		RiverJobID int64 `json:"river_job_id"`
	}
	require.NoError(t, json.Unmarshal(retried.Output(), &out))
	require.Equal(t, 2, out.Attempt)
	require.Equal(t, second.ID, out.RiverJobID, "the retried River job names the one that ran the attempt")

	events := b.events(t, g)
	require.Len(t, events, 2)
	require.Contains(t, events[0], "job_failed: job")
	require.Contains(t, events[1], fmt.Sprintf("river_ui_action: River UI retry of build_run %d, which ran attempt 1", first.ID))
	require.Contains(t, events[1], fmt.Sprintf("runs again as attempt 2 (River job %d) with 1 dependents", second.ID))
	require.Contains(t, events[1], "the group is open again")
	actions := b.logs.UIActions(t)
	require.Len(t, actions, 1)
	require.Equal(t, []any{"build_run", first.ID, "retry"}, []any{actions[0].Kind, actions[0].JobID, actions[0].Action})
	require.Contains(t, actions[0].Did, "runs again as attempt 2")
	require.Contains(t, b.builds(t), "docs-build:failed", "the build ran, and its line says so")
	require.Contains(t, b.builds(t), "docs-build:succeeded")

	_, err = b.river.JobRetry(ctx, first.ID)
	require.NoError(t, err)
	again := b.waitEnded(ctx, t, first.ID, 3)
	require.Equal(t, rivertype.JobStateCancelled, again.State, "nothing to run again: not completed")
	require.Contains(t, again.Errors[len(again.Errors)-1].Error, "already succeeded")
	require.Contains(t, again.Errors[len(again.Errors)-1].Error, "POST /v1/groups")
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.Complete: 3}, b.waitState(t, g, jobgraph.GroupComplete).Counts)
	require.Equal(t, 2, b.apiJob(t, g, "docs-build").Attempt)
	events = b.events(t, g)
	require.Len(t, events, 3)
	require.Contains(t, events[2], "already succeeded")
	require.Len(t, b.logs.UIActions(t), 2)
}

// River UI's Cancel on the River job of a running build kills the build's process and records the
// job cancelled, with its dependent, in the transaction that ends the River job cancelled; the
// job graph's events and the worker's log say so, and the group ends canceled.
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
	// aside ran beside it; once it is complete, the one running build is slow, and the API says
	// so once the worker has marked it.
	b.waitCounts(t, g, map[jobgraph.JobState]int{jobgraph.Running: 1, jobgraph.Waiting: 1, jobgraph.Complete: 1})
	var id int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM build_scheduler.river_job WHERE kind = 'build_run' AND state = 'running'
		AND args->>'job_name' = 'slow'`).Scan(&id))

	_, err := b.river.JobCancel(ctx, id)
	require.NoError(t, err)
	canceled := b.waitState(t, g, jobgraph.GroupCanceled)
	require.Equal(t, map[jobgraph.JobState]int{jobgraph.CancelComplete: 2, jobgraph.Complete: 1}, canceled.Counts)
	require.False(t, alive(pid), "the build's process was killed")
	row := b.waitEnded(ctx, t, id, 1)
	require.Equal(t, rivertype.JobStateCancelled, row.State)
	require.Contains(t, row.Errors[len(row.Errors)-1].Error, "build slow")

	events := b.events(t, g)
	require.Len(t, events, 1)
	require.Contains(t, events[0], fmt.Sprintf("river_ui_action: River UI cancel of build_run %d: killed build slow", id))
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

// River UI's Cancel or Delete on the River job of a waiting build takes the build out of its
// group as Cancel on a running one does: the scheduler's reaper finds the build's River job gone
// before it ran, and the build and its dependent that had not run are cancel_complete; the
// group, with nothing else to run, ends canceled.
func TestRiverUICancelOrDeleteOfAWaitingBuild(t *testing.T) {
	t.Parallel()
	for name, press := range map[string]func(context.Context, *testing.T, *queue.Client, int64){
		"Cancel": func(ctx context.Context, t *testing.T, client *queue.Client, id int64) {
			t.Helper()
			row, err := client.JobCancel(ctx, id)
			require.NoError(t, err)
			require.Equal(t, rivertype.JobStateCancelled, row.State)
		},
		"Delete": func(ctx context.Context, t *testing.T, client *queue.Client, id int64) {
			t.Helper()
			_, err := client.JobDelete(ctx, id)
			require.NoError(t, err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := testdb.New(t)
			base := startScheduler(t, testConfig(t, dbURL))
			var g jobgraph.Group
			jobs := []dag.JobSpec{{Name: "waiting", Target: "unserved", Command: []string{"true"}},
				{Name: "after", Target: "unserved", Command: []string{"true"}, DependsOn: []string{"waiting"}}}
			require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", dag.Submission{Name: "waiting", Jobs: jobs}, &g))
			pool := testdb.NewPoolFor(t, dbURL)
			client, err := queue.NewInserter(pool, queue.BuildScheduler)
			require.NoError(t, err)
			var id int64
			require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM build_scheduler.river_job WHERE kind = 'build_run'`).Scan(&id))
			press(ctx, t, client, id)

			done := waitGroup(t, base, g.ID)
			require.Equal(t, jobgraph.GroupCanceled, done.State)
			require.Equal(t, map[jobgraph.JobState]int{jobgraph.CancelComplete: 2}, done.Counts)
			var events struct{ Items []jobgraph.Event }
			require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/events", base, g.ID), nil, &events))
			var messages []string
			for _, e := range events.Items {
				messages = append(messages, e.Message)
			}
			require.Contains(t, strings.Join(messages, "\n"), "(River UI's "+name+" on a waiting build)")
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
