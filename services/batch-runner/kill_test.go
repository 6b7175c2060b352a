package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/apiclient"
	"drover.dev/shared/procattr"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// buildBinary builds this service into a temporary folder, or skips the test when the go
// command is not there to do it.
func buildBinary(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go build is unavailable (%v): killing the batch-runner process needs its binary", err)
	}
	bin := filepath.Join(t.TempDir(), "batch-runner")
	out, err := exec.CommandContext(t.Context(), goCmd, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// process is a batch-runner process the test started.
type process struct {
	cmd  *exec.Cmd
	base string
	log  string
}

// startProcess runs bin with env on a free loopback port and waits until it is ready. The
// process is killed when the test ends, and its log is printed if the test failed.
func startProcess(t *testing.T, bin string, env map[string]string) *process {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	logPath := filepath.Join(t.TempDir(), "batch-runner.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logFile.Close() })

	cmd := exec.CommandContext(t.Context(), bin) // killed at the test's end, as p.kill does
	cmd.Env = []string{"BATCH_RUNNER_HTTP_ADDR=" + addr}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	procattr.DieWithParent(cmd) // a test binary killed by its timeout takes the process with it
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, base: "http://" + addr, log: logPath}
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("batch-runner log (%s):\n%s", p.base, out)
		}
	})
	require.Eventually(t, func() bool {
		return apiclient.Answers(t.Context(), p.base+"/readyz")
	}, 15*time.Second, 20*time.Millisecond, "batch-runner did not become ready")
	return p
}

// kill sends SIGKILL: no shutdown path runs, as when a machine dies.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func processEnv(dbURL string, spinUp time.Duration) map[string]string {
	return map[string]string{
		"BATCH_RUNNER_DATABASE_URL": dbURL, "BATCH_RUNNER_API_TOKENS": servicetest.Token,
		"BATCH_RUNNER_LOG_LEVEL": "info", "BATCH_RUNNER_LOG_FORMAT": "text",
		"BATCH_RUNNER_HOTKEY_URI": "//Alice", "BATCH_RUNNER_CYCLE": "1h",
		// testConfig's proof of work, with a time limit a starved honest executor does not miss
		// (see testConfig).
		"BATCH_RUNNER_GENERATORS": "*=pow", "BATCH_RUNNER_POW_RANGE": strconv.Itoa(testPoWRange), "BATCH_RUNNER_POW_TIME_LIMIT": "4s",
		"BATCH_RUNNER_SPIN_UPS": "*:" + spinUp.String(), "BATCH_RUNNER_MIN_SPIN_UP": "50ms",
		"BATCH_RUNNER_MANIFEST_TIMEOUT": "5s", "BATCH_RUNNER_READY_GRACE": "2s",
		"BATCH_RUNNER_JOB_EXTRA": "500ms", "BATCH_RUNNER_RECEIPT_TIMEOUT": "1s",
		// JOB_TIMEOUT, RESCUE_AFTER, LEASE and LEASE_SWEEP keep their defaults (15m, 30s, 20s,
		// 10s): a batch whose process died is taken over by its lease, not by River's rescue.
	}
}

// resultRows counts what a batch wrote besides its row: jobs, manifests, receipts, and the
// score_batch jobs waiting for scorer.
func resultRows(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"batch_runner.batch_jobs", "batch_runner.batch_manifests", "batch_runner.batch_receipts", "scorer.river_job"} {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
		out[table] = n
	}
	return out
}

// leaseTakeOver is the LEASE_EXPIRED event of a batch (or shard) as written by the sweeper.
type leaseTakeOver struct {
	Attempt int
	Shard   *int
	At      time.Time
	Data    struct {
		RiverJobID  int64     `json:"river_job_id"`
		TakenOverBy int64     `json:"taken_over_by"`
		Attempt     int       `json:"attempt"`
		LeaseUntil  time.Time `json:"lease_until"`
		LeaseS      float64   `json:"lease_s"`
		SweepS      float64   `json:"sweep_s"`
	}
}

// takeOvers returns the LEASE_EXPIRED events of batch id in order.
func takeOvers(t *testing.T, pool *pgxpool.Pool, id int64) []leaseTakeOver {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT attempt, shard, at, data FROM batch_runner.batch_events
		WHERE batch_id = $1 AND type = $2 AND subtype = $3 ORDER BY id`, id, sysevent.TypeRiverJob, sysevent.LeaseExpired)
	require.NoError(t, err)
	defer rows.Close()
	var out []leaseTakeOver
	for rows.Next() {
		var e leaseTakeOver
		var data []byte
		require.NoError(t, rows.Scan(&e.Attempt, &e.Shard, &e.At, &data))
		require.NoError(t, json.Unmarshal(data, &e.Data))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

// riverJob is what these tests read of a River job of batch-runner's queues.
type riverJob struct {
	Kind, State string
	Args        []byte
	AttemptedBy []string
	Output      []byte
}

func readRiverJob(t *testing.T, pool *pgxpool.Pool, id int64) riverJob {
	t.Helper()
	var j riverJob
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT kind, state, args, coalesce(attempted_by, '{}'),
		coalesce(metadata -> 'output', 'null') FROM batch_runner.river_job WHERE id = $1`, id).
		Scan(&j.Kind, &j.State, &j.Args, &j.AttemptedBy, &j.Output))
	return j
}

// requireTakenOverByLease checks that the one takeover of batch id, attempt 1, came from its lease
// running out with the default settings: the lease it records is the default one, it was taken
// after the lease's end and not before the kill, and the job it was handed to is a run_batch (or
// run_batch_shard) job that completed. Then, within LIVENESS_TIMEOUT and 30 s of the kill, the
// dead attempt's job is not running any more: the liveness sweep gave it back; run again, it
// finds the batch taken over and completes naming the takeover's job, having run nothing. It
// returns the takeover.
func requireTakenOverByLease(t *testing.T, pool *pgxpool.Pool, id, deadJob int64, killed time.Time, kind string) leaseTakeOver {
	t.Helper()
	events := takeOvers(t, pool, id)
	require.Len(t, events, 1, "one takeover")
	e := events[0]
	require.Equal(t, 1, e.Attempt, "recorded on the killed attempt")
	require.Equal(t, deadJob, e.Data.RiverJobID)
	require.InDelta(t, 20, e.Data.LeaseS, 0, "the default BATCH_RUNNER_LEASE")
	require.InDelta(t, 10, e.Data.SweepS, 0, "the default BATCH_RUNNER_LEASE_SWEEP")
	require.True(t, e.Data.LeaseUntil.After(killed.Add(-time.Second)), "the killed process renewed its lease until it died")
	require.True(t, e.At.After(e.Data.LeaseUntil), "taken over once the lease had run out, not before")
	require.NotEqual(t, deadJob, e.Data.TakenOverBy)
	next := readRiverJob(t, pool, e.Data.TakenOverBy)
	require.Equal(t, kind, next.Kind)
	require.Equal(t, "completed", next.State)
	t.Logf("killed at %s; lease ran out %s later; taken over %s after the kill",
		killed.Format(time.RFC3339Nano), e.Data.LeaseUntil.Sub(killed), e.At.Sub(killed))
	requireDeadJobGivenBack(t, pool, deadJob, killed, fmt.Sprintf(`{"taken_over_by": %d}`, e.Data.TakenOverBy))
	return e
}

// requireDeadJobGivenBack waits until the killed attempt's River job deadJob is no longer
// running, which the liveness sweep brings within LIVENESS_TIMEOUT and 30 s of the kill (its
// 15-minute timeout would keep it there for River's rescuer), and checks that it was given back
// from the dead process and, run again, completed with output holding want's fields.
func requireDeadJobGivenBack(t *testing.T, pool *pgxpool.Pool, deadJob int64, killed time.Time, want string) {
	t.Helper()
	bound := queue.LivenessTimeoutDefault + 30*time.Second
	var dead riverJob
	require.Eventually(t, func() bool {
		dead = readRiverJob(t, pool, deadJob)
		return dead.State != "running"
	}, bound-time.Since(killed), 100*time.Millisecond, "the dead process's job is still running %s after the kill", bound)
	t.Logf("the dead process's job %d was %s %s after the kill", deadJob, dead.State, time.Since(killed).Round(time.Millisecond))
	require.Eventually(t, func() bool {
		dead = readRiverJob(t, pool, deadJob)
		return dead.State == "completed"
	}, 45*time.Second, 100*time.Millisecond, "the given-back job, run again, never completed: %s", dead.State)
	var got map[string]any
	require.NoError(t, json.Unmarshal(dead.Output, &got))
	var fields map[string]any
	require.NoError(t, json.Unmarshal([]byte(want), &fields))
	for k, v := range fields {
		require.Equal(t, v, got[k], "output %s: %s", k, dead.Output)
	}
	var rescued bool
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT errors[1] ->> 'error' LIKE 'rescued from process victim %'
		FROM batch_runner.river_job WHERE id = $1`, deadJob).Scan(&rescued))
	require.True(t, rescued, "given back by the liveness sweep, naming the dead process")
}

// TestKilledBatchIsTakenOverByItsLease SIGKILLs the process running a batch in each stage of
// phase 2, with every timeout and the lease at their defaults, and checks that nothing but the
// running batch row was written; another replica then takes the batch over once its lease has run
// out (a LEASE_EXPIRED event naming the default lease), runs it as attempt 2 under a new
// run_batch job, and writes and scores it once; the liveness sweep gives the dead job back
// within LIVENESS_TIMEOUT and 30 s, where River's rescuer would wait 15 minutes. Phase 3 is no stage to kill in: the results, score_batch and
// the job's completion are one transaction, which a kill rolls back whole.
func TestKilledBatchIsTakenOverByItsLease(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	const miners = 3
	for _, tc := range []struct {
		stage string
		// victim and survivor change processEnv for the killed process and the one taking over.
		victim, survivor map[string]string
		scenario         minersim.Scenario
		// in tells when the victim is well inside the stage.
		in   func(batch.ProgressView) bool
		want map[string]int
	}{{
		// Miner 0 never sends its manifest: the stage waits MANIFEST_TIMEOUT for it.
		stage: "manifests", scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{0: {Silent: minersim.StageManifest}}},
		victim:   map[string]string{"BATCH_RUNNER_MANIFEST_TIMEOUT": "2m"},
		survivor: map[string]string{"BATCH_RUNNER_MANIFEST_TIMEOUT": "2s"},
		in:       func(v batch.ProgressView) bool { return v.Stage == "manifests" && v.Manifests.Received == miners-1 },
		want:     map[string]int{"completed": miners - 1},
	}, {
		stage:  "availability",
		victim: map[string]string{"BATCH_RUNNER_SPIN_UPS": "*:2m"},
		in:     func(v batch.ProgressView) bool { return v.Stage == "availability" && v.Availability.Accepted == miners },
		want:   map[string]int{"completed": miners},
	}, {
		// Every answer comes 6 s after its request, within the time limit.
		stage: "hot", scenario: minersim.Scenario{Default: minersim.Behaviour{AnswerDelay: minersim.Duration(6 * time.Second)}},
		victim:   map[string]string{"BATCH_RUNNER_POW_TIME_LIMIT": "12s"},
		survivor: map[string]string{"BATCH_RUNNER_POW_TIME_LIMIT": "12s"},
		in:       func(v batch.ProgressView) bool { return v.Stage == "hot" && v.Hot.Sent == miners },
		want:     map[string]int{"completed": miners},
	}} {
		t.Run(tc.stage, func(t *testing.T) {
			t.Parallel()
			dbURL := testdb.New(t)
			pool := testdb.NewPoolFor(t, dbURL)
			startFleet(t, pool, minersim.Config{
				Miners: miners, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond,
				Scenario: tc.scenario,
			})
			env := func(change map[string]string) map[string]string {
				e := processEnv(dbURL, 2*time.Second)
				maps.Copy(e, change)
				return e
			}
			victimEnv := env(tc.victim)
			victimEnv["BATCH_RUNNER_WORKER_ID"] = "victim"
			victim := startProcess(t, bin, victimEnv)
			jobID := enqueueBatch(t, victim.base)
			currentProgress(t, victim.base, func(v batch.ProgressView) bool { return v.JobID == jobID })
			// Started only now, so that the victim's one batch slot took the job.
			survivorEnv := env(tc.survivor)
			survivorEnv["BATCH_RUNNER_WORKER_ID"] = "survivor"
			survivor := startProcess(t, bin, survivorEnv)
			currentProgress(t, victim.base, tc.in)
			killed := time.Now()
			victim.kill(t)

			// Nothing but the running batch row: no jobs, manifests or receipts, nothing for scorer.
			var state string
			var attempt int
			require.NoError(t, pool.QueryRow(context.Background(),
				`SELECT state, attempt FROM batch_runner.batches WHERE river_job_id = $1`, jobID).Scan(&state, &attempt))
			require.Equal(t, "running", state)
			require.Equal(t, 1, attempt)
			require.Equal(t, map[string]int{
				"batch_runner.batch_jobs": 0, "batch_runner.batch_manifests": 0, "batch_runner.batch_receipts": 0, "scorer.river_job": 0,
			}, resultRows(t, pool))

			done := waitDone(t, survivor.base, jobID, 3*time.Minute)
			require.Equal(t, "done", done.State, "error: %v", done.Error)
			require.Equal(t, 2, done.Attempt, "the takeover ran the batch as attempt 2")
			requireCounts(t, tc.want, done)
			e := requireTakenOverByLease(t, pool, done.ID, jobID, killed, "run_batch")
			next := readRiverJob(t, pool, e.Data.TakenOverBy)
			require.JSONEq(t, fmt.Sprintf(`{"batch_id": %d, "attempt": 1}`, done.ID), string(takeOverArgs(t, next.Args)))
			require.Equal(t, []string{"survivor"}, next.AttemptedBy)
			require.Equal(t, []string{"victim", "survivor"}, readRiverJob(t, pool, jobID).AttemptedBy, "given back, the dead job ran again on the survivor")
			jobs := len(done.Jobs)
			require.Equal(t, map[string]int{
				"batch_runner.batch_jobs": jobs, "batch_runner.batch_manifests": miners - len(tc.scenario.Miners),
				"batch_runner.batch_receipts": 3 * jobs, "scorer.river_job": 1,
			}, resultRows(t, pool), "written once")
			scores := scoreJobs(t, pool)
			require.Len(t, scores, 1, "the batch is scored once")
			require.Equal(t, done.ID, scores[0].BatchID)
			require.Equal(t, 1.0, servicetest.Value(t, servicetest.Metrics(t, survivor.base), "drover_batch_runner_lease_takeovers_total",
				map[string]string{"of": "batch"}), "the survivor's sweeper took it over")
		})
	}
}

// takeOverArgs returns the take_over member of a run_batch job's args.
func takeOverArgs(t *testing.T, args []byte) json.RawMessage {
	t.Helper()
	var a struct {
		TakeOver json.RawMessage `json:"take_over"`
	}
	require.NoError(t, json.Unmarshal(args, &a))
	return a.TakeOver
}

// TestRescuedJobOfATakenOverBatchRunsNothing kills the process running a batch with a short
// lease and a short JOB_TIMEOUT, so that River's rescuer brings the killed attempt's job back
// after another replica has taken the batch over: that job finds the batch handed to the
// takeover's job and completes without running anything, naming it.
func TestRescuedJobOfATakenOverBatchRunsNothing(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dbURL := testdb.New(t)
	pool := testdb.NewPoolFor(t, dbURL)
	const miners = 2
	startFleet(t, pool, minersim.Config{
		Miners: miners, Manifest: protocol.Manifest{{Class: "always_on.test", Count: 1}}, SpinUp: 20 * time.Millisecond,
	})
	env := processEnv(dbURL, 5*time.Second)
	env["BATCH_RUNNER_JOB_TIMEOUT"], env["BATCH_RUNNER_LEASE"], env["BATCH_RUNNER_LEASE_SWEEP"] = "10s", "2s", "500ms"
	victim := startProcess(t, bin, env)
	jobID := enqueueBatch(t, victim.base)
	currentProgress(t, victim.base, func(v batch.ProgressView) bool { return v.JobID == jobID && v.Stage == "availability" })
	env["BATCH_RUNNER_SPIN_UPS"] = "*:1s"
	survivor := startProcess(t, bin, env)
	victim.kill(t)

	done := waitDone(t, survivor.base, jobID, time.Minute)
	require.Equal(t, "done", done.State, "error: %v", done.Error)
	require.Equal(t, 2, done.Attempt)
	events := takeOvers(t, pool, done.ID)
	require.Len(t, events, 1)
	// River's rescuer (once the dead leader's lease lapsed and the job outran its timeout) hands
	// the killed attempt's job out again: it runs nothing.
	var dead riverJob
	require.Eventually(t, func() bool {
		dead = readRiverJob(t, pool, jobID)
		return dead.State == "completed"
	}, 2*time.Minute, 100*time.Millisecond, "the rescued job ends")
	require.GreaterOrEqual(t, len(dead.AttemptedBy), 2, "River ran it again")
	require.JSONEq(t, fmt.Sprintf(`{"batch_id": %d, "taken_over_by": %d}`, done.ID, events[0].Data.TakenOverBy), string(dead.Output))
	b := waitDone(t, survivor.base, jobID, time.Second)
	require.Equal(t, 2, b.Attempt, "no attempt more")
	require.Equal(t, map[string]int{
		"batch_runner.batch_jobs": miners, "batch_runner.batch_manifests": miners, "batch_runner.batch_receipts": 3 * miners, "scorer.river_job": 1,
	}, resultRows(t, pool), "written once")
}
