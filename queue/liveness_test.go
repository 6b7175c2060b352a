package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue/queuetest"
)

// holdArgs is a job whose worker holds it until its context ends or the file Release exists.
type holdArgs struct {
	Release string `json:"release"`
}

func (holdArgs) Kind() string { return "liveness_hold" }

// holdWorker reports each attempt's context cause on causes.
type holdWorker struct {
	river.WorkerDefaults[holdArgs]
	causes chan error
}

func (w *holdWorker) Work(ctx context.Context, job *river.Job[holdArgs]) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if w.causes != nil {
				w.causes <- context.Cause(ctx)
			}
			return context.Cause(ctx)
		case <-tick.C:
			if _, err := os.Stat(job.Args.Release); err == nil {
				return nil
			}
		}
	}
}

// livenessBundle is a schema of its own in the queue tests' database, holding River's tables and
// the processes table exactly as migrations creates it.
type livenessBundle struct {
	url    string
	schema string
	pool   *pgxpool.Pool
	client *Client // insert-only, on schema
}

func setupLiveness(t *testing.T) *livenessBundle {
	t.Helper()
	ctx := context.Background()
	url, err := riverURL()
	require.NoError(t, err)
	b := &livenessBundle{url: url, schema: "lv_" + randomHex(t)}
	b.pool, err = pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(b.pool.Close)
	_, err = b.pool.Exec(ctx, "CREATE SCHEMA "+b.schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = b.pool.Exec(context.Background(), "DROP SCHEMA "+b.schema+" CASCADE") })
	migrator, err := rivermigrate.New(riverpgxv5.New(b.pool), &rivermigrate.Config{Schema: b.schema})
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "SET search_path TO "+b.schema+"; "+processesDDL(t)+"; RESET search_path")
	require.NoError(t, err)
	b.client, err = river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: b.schema, SkipUnknownJobCheck: true})
	require.NoError(t, err)
	return b
}

// processesDDL is the Up section of the migration that creates the processes table.
func processesDDL(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "migrations", "sql", "common", "00002_processes.sql"))
	require.NoError(t, err)
	up := strings.SplitN(string(b), "-- +goose Up", 2)[1]
	return strings.SplitN(up, "-- +goose Down", 2)[0]
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// addProcess writes a liveness record last renewed age ago.
func (b *livenessBundle) addProcess(t *testing.T, id string, age time.Duration) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `INSERT INTO `+b.schema+`.processes (id, name, host, pid, timeout, renewed_at)
		VALUES ($1, 'test', 'host-1', 42, interval '30 seconds', now() - $2::interval)`, id, age)
	require.NoError(t, err)
}

// insert inserts a hold job and returns its id.
func (b *livenessBundle) insert(t *testing.T, opts *river.InsertOpts) int64 {
	t.Helper()
	res, err := b.client.Insert(context.Background(), holdArgs{Release: "/nonexistent"}, opts)
	require.NoError(t, err)
	return res.Job.ID
}

func (b *livenessBundle) job(t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	job, err := b.client.JobGet(context.Background(), id)
	require.NoError(t, err)
	return job
}

func (b *livenessBundle) processIDs(t *testing.T) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT id FROM `+b.schema+`.processes ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return ids
}

func TestSweepGivesBackDeadProcessJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	b.addProcess(t, "dead-1", time.Minute)
	b.addProcess(t, "live-1", 0)
	retried := b.insert(t, nil)
	last := b.insert(t, &river.InsertOpts{MaxAttempts: 1})
	cancelled := b.insert(t, nil)
	require.Len(t, queuetest.FetchAsDeadProcess(ctx, t, b.pool, b.schema, river.QueueDefault, "dead-1", 3), 3)
	_, err := b.client.JobCancel(ctx, cancelled)
	require.NoError(t, err)
	live := b.insert(t, nil)
	require.Len(t, queuetest.FetchAsDeadProcess(ctx, t, b.pool, b.schema, river.QueueDefault, "live-1", 1), 1)

	rescued, dead := map[string]int{}, 0
	res, err := Sweep(ctx, b.pool, b.schema, SweepOptions{
		OnRescue: func(kind string, n int) { rescued[kind] += n },
		OnDead:   func(n int) { dead += n },
	})
	require.NoError(t, err)
	require.Equal(t, 1, dead)
	require.Equal(t, []string{"dead-1"}, res.Processes)
	require.Equal(t, map[string]int{"liveness_hold": 3}, rescued)
	require.Equal(t, 1, res.Retried)
	require.Equal(t, 1, res.Discarded)
	require.Equal(t, 1, res.Cancelled)

	for id, state := range map[int64]rivertype.JobState{
		retried: rivertype.JobStateRetryable, last: rivertype.JobStateDiscarded, cancelled: rivertype.JobStateCancelled,
	} {
		job := b.job(t, id)
		require.Equal(t, state, job.State, "job %d", id)
		require.Len(t, job.Errors, 1)
		require.Contains(t, job.Errors[0].Error, "rescued from process dead-1 (test on host-1, pid 42), which stopped renewing its liveness")
		var meta map[string]any
		require.NoError(t, json.Unmarshal(job.Metadata, &meta))
		require.EqualValues(t, 1, meta["river:rescue_count"], "counted as River's rescuer counts its rescues")
	}
	require.WithinDuration(t, b.job(t, last).FinalizedAt.Add(10*time.Second), b.job(t, retried).ScheduledAt, time.Second,
		"a retry runs a third of the dead process's timeout after the sweep, once a process declared dead but alive has stopped it")
	require.Equal(t, rivertype.JobStateRunning, b.job(t, live).State, "a live process keeps its job")
	require.Equal(t, []string{"live-1"}, b.processIDs(t), "the dead process's record is gone")

	res, err = Sweep(ctx, b.pool, b.schema, SweepOptions{})
	require.NoError(t, err)
	require.Zero(t, res.Jobs(), "a second sweep finds nothing")
}

func TestListProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	b.addProcess(t, "dead-1", time.Minute)
	b.addProcess(t, "live-1", 0)
	b.insert(t, nil)
	queuetest.FetchAsDeadProcess(ctx, t, b.pool, b.schema, river.QueueDefault, "live-1", 1)

	list, err := ListProcesses(ctx, b.pool, Service(b.schema))
	require.NoError(t, err)
	got := make([][3]any, len(list))
	for i, p := range list {
		got[i] = [3]any{p.ID, p.State, p.Running}
	}
	require.Equal(t, [][3]any{{"dead-1", ProcessDead, 0}, {"live-1", ProcessLive, 1}}, got)
	require.Equal(t, "30s", list[0].Timeout)
}

// startProcess starts a River client working hold jobs with the liveness of a process timeout
// long, registered and renewing, and returns the process and its workers' context causes.
func (b *livenessBundle) startProcess(t *testing.T, id string, timeout time.Duration) (*Process, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := NewProcess(b.pool, Service(b.schema), ProcessConfig{ID: id, Name: "test", Timeout: timeout})
	require.NoError(t, p.Register(ctx))
	causes := make(chan error, 10)
	workers := river.NewWorkers()
	river.AddWorker(workers, &holdWorker{causes: causes})
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{
		ID: id, Schema: b.schema, Workers: workers, Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Middleware: []rivertype.Middleware{p.Middleware()}, FetchCooldown: 20 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = client.StopAndCancel(context.Background())
	})
	return p, causes
}

func (b *livenessBundle) waitState(t *testing.T, id int64, state rivertype.JobState) {
	t.Helper()
	require.Eventually(t, func() bool { return b.job(t, id).State == state }, 20*time.Second, 20*time.Millisecond,
		"job %d never became %s", id, state)
}

// TestProcessDeclaredDeadStopsItsJobs has a live process's record swept from under it, as happens
// to a process whose database was out of reach past its timeout: at its next renewal it stops the
// job it lost and registers again.
func TestProcessDeclaredDeadStopsItsJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	_, causes := b.startProcess(t, "revenant", 600*time.Millisecond)
	id := b.insert(t, nil)
	b.waitState(t, id, rivertype.JobStateRunning)

	_, err := b.pool.Exec(ctx, `UPDATE `+b.schema+`.processes SET renewed_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	res, err := Sweep(ctx, b.pool, b.schema, SweepOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Retried)

	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, ErrLivenessLost)
		require.ErrorContains(t, cause, "process revenant was declared dead")
	case <-time.After(20 * time.Second):
		t.Fatal("the process never stopped the job it lost")
	}
	require.Eventually(t, func() bool { return len(b.processIDs(t)) == 1 }, 20*time.Second, 20*time.Millisecond,
		"the process registers again")
}

// TestRenewalFailureStopsJobsBeforeASweep stubs the clock of a process whose renewals fail: its
// jobs run on while a sweep cannot yet have declared it dead, and stop once one may.
func TestRenewalFailureStopsJobsBeforeASweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	// A service whose schema has no processes table: every renewal fails.
	p := NewProcess(b.pool, Service("no_such_schema"), ProcessConfig{ID: "cut-off"})
	defer p.releaseConn()
	p.now = func() time.Time { return now }
	p.setRenewed(now)

	stopped := make(chan error, 1)
	go func() {
		_ = p.Middleware().Work(ctx, &rivertype.JobRow{ID: 7}, func(ctx context.Context) error {
			<-ctx.Done()
			stopped <- context.Cause(ctx)
			return nil
		})
	}()
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.running) == 1 }, 5*time.Second, time.Millisecond)

	now = now.Add(LivenessTimeoutDefault - 2*p.period - time.Millisecond)
	p.renew(ctx)
	select {
	case cause := <-stopped:
		t.Fatalf("stopped while no sweep could have declared the process dead: %v", cause)
	default:
	}
	now = now.Add(time.Millisecond)
	p.renew(ctx)
	cause := <-stopped
	require.ErrorIs(t, cause, ErrLivenessLost)
	require.ErrorContains(t, cause, "could not renew its liveness for 20s")
}

// TestLeaveGivesBackJobsAtOnce: a process that stops cleanly removes its record and gives back the
// jobs its client could not stop, with no wait for the timeout.
func TestLeaveGivesBackJobsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	p := NewProcess(b.pool, Service(b.schema), ProcessConfig{ID: "leaving", Name: "test"})
	require.NoError(t, p.Register(ctx))
	id := b.insert(t, nil)
	queuetest.FetchAsDeadProcess(ctx, t, b.pool, b.schema, river.QueueDefault, "leaving", 1)
	require.NoError(t, p.Leave(ctx))
	job := b.job(t, id)
	require.Equal(t, rivertype.JobStateRetryable, job.State)
	require.Contains(t, job.Errors[0].Error, "rescued from process leaving (test on")
	require.Contains(t, job.Errors[0].Error, "which stopped cleanly")
	require.Empty(t, b.processIDs(t))
	require.NoError(t, p.Leave(ctx), "leaving twice is harmless")
}

// helperEnv names the settings of TestHelperLivenessProcess.
const (
	helperURL    = "LIVENESS_HELPER_URL"
	helperSchema = "LIVENESS_HELPER_SCHEMA"
	helperID     = "LIVENESS_HELPER_ID"
)

// TestHelperLivenessProcess is not a test: it is the process the liveness tests kill and stop,
// a River client working hold jobs with the default liveness timeout. It runs only when
// LIVENESS_HELPER_URL is set.
func TestHelperLivenessProcess(t *testing.T) {
	t.Parallel()
	url := os.Getenv(helperURL)
	if url == "" {
		t.Skip("the liveness tests' helper process")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	schema, id := os.Getenv(helperSchema), os.Getenv(helperID)
	p := NewProcess(pool, Service(schema), ProcessConfig{ID: id, Name: "helper"})
	require.NoError(t, p.Register(ctx))
	workers := river.NewWorkers()
	river.AddWorker(workers, &holdWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID: id, Schema: schema, Workers: workers, Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Middleware: []rivertype.Middleware{p.Middleware()}, FetchCooldown: 20 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	_ = p.Run(ctx) // until killed
}

// startHelper starts TestHelperLivenessProcess as process id on b's schema.
func (b *livenessBundle) startHelper(t *testing.T, id string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperLivenessProcess$")
	cmd.Env = append(os.Environ(), helperURL+"="+b.url, helperSchema+"="+b.schema, helperID+"="+id)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// waitRenewal waits until process id renews its record.
func (b *livenessBundle) waitRenewal(t *testing.T, id string) {
	t.Helper()
	renewed := func() (at time.Time) {
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT renewed_at FROM `+b.schema+`.processes WHERE id = $1`, id).Scan(&at))
		return at
	}
	first := renewed()
	require.Eventually(t, func() bool { return renewed().After(first) }, 20*time.Second, 20*time.Millisecond, "%s never renewed", id)
}

// killHolding starts TestHelperLivenessProcess as process id, waits until it runs a job and
// SIGKILLs it, and returns the job it was running.
func (b *livenessBundle) killHolding(t *testing.T, id string) int64 {
	t.Helper()
	cmd := b.startHelper(t, id)
	job := b.insert(t, nil)
	b.waitState(t, job, rivertype.JobStateRunning)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	return job
}

// sweepUntil sweeps b's schema every second, as a surviving replica does, until done is closed.
func (b *livenessBundle) sweepUntil(t *testing.T, done <-chan struct{}) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_, _ = Sweep(context.Background(), b.pool, b.schema, SweepOptions{})
			}
		}
	})
}

// TestKilledProcessJobsComeBack SIGKILLs a process holding a job, with the default timeout: a
// sweep gives the job back within LIVENESS_TIMEOUT and a renewal period, whatever the kind's own
// timeout (River's default, a minute, would keep it running until its rescuer came).
func TestKilledProcessJobsComeBack(t *testing.T) {
	t.Parallel()
	b := setupLiveness(t)
	id := b.killHolding(t, "doomed")
	done := make(chan struct{})
	defer close(done)
	b.sweepUntil(t, done)
	require.Eventually(t, func() bool { return b.job(t, id).State == rivertype.JobStateRetryable },
		LivenessTimeoutDefault+LivenessTimeoutDefault/6+10*time.Second, 100*time.Millisecond, "the dead process's job comes back")
	job := b.job(t, id)
	require.Contains(t, job.Errors[0].Error, "rescued from process doomed (helper on")
	require.Empty(t, b.processIDs(t))
}

// TestStalledProcessIsNotSwept stops (SIGSTOP) a process holding a job for 20 s, right after a
// renewal, so 10 s short of the default timeout, while another replica sweeps every second: the
// process is not declared dead, and once it runs again it completes its job on its first attempt.
func TestStalledProcessIsNotSwept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	cmd := b.startHelper(t, "stalled")
	release := filepath.Join(t.TempDir(), "release")
	res, err := b.client.Insert(ctx, holdArgs{Release: release}, nil)
	require.NoError(t, err)
	id := res.Job.ID
	b.waitState(t, id, rivertype.JobStateRunning)

	done := make(chan struct{})
	b.sweepUntil(t, done)
	b.waitRenewal(t, "stalled")
	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(20 * time.Second) // the stall itself: what the test is about, not a wait for an event
	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	b.waitState(t, id, rivertype.JobStateCompleted)
	close(done)
	job := b.job(t, id)
	require.Equal(t, 1, job.Attempt)
	require.Empty(t, job.Errors, "never rescued")
	require.Equal(t, []string{"stalled"}, b.processIDs(t))
}

// TestRestartUnderTheSameIDGivesBackTheDeadJobs SIGKILLs a process holding a job and starts
// another under the same ID at once, as a pod's container restarts with its WORKER_ID: the new
// process gives back the old one's job when it registers, naming what happened, instead of
// renewing the dead process's record and keeping the job running for its whole timeout.
func TestRestartUnderTheSameIDGivesBackTheDeadJobs(t *testing.T) {
	t.Parallel()
	b := setupLiveness(t)
	id := b.killHolding(t, "pod-0")
	b.startHelper(t, "pod-0")
	require.Eventually(t, func() bool {
		job := b.job(t, id)
		return len(job.Errors) == 1
	}, 20*time.Second, 50*time.Millisecond, "the restarted process gave back its predecessor's job")
	require.Contains(t, b.job(t, id).Errors[0].Error, "rescued from process pod-0 (helper on")
	require.Contains(t, b.job(t, id).Errors[0].Error, "which was replaced by a process started under the same id")
	require.Equal(t, []string{"pod-0"}, b.processIDs(t))
}

// TestRenewalOffTheJobPath holds every connection of a process's pool but the one its liveness
// holds, as jobs that each keep a connection for long do, for three times its timeout while
// another replica sweeps: the process keeps renewing and is never declared dead.
func TestRenewalOffTheJobPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLiveness(t)
	cfg, err := pgxpool.ParseConfig(b.url)
	require.NoError(t, err)
	cfg.MaxConns = 3
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	const timeout = 600 * time.Millisecond
	p := NewProcess(pool, Service(b.schema), ProcessConfig{ID: "busy", Name: "test", Timeout: timeout})
	require.NoError(t, p.Register(ctx))
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(runCtx) })
	t.Cleanup(func() { stop(); wg.Wait() })
	b.waitRenewal(t, "busy") // the liveness holds its connection from its first renewal

	var jobs []*pgxpool.Conn
	for range cfg.MaxConns - 1 {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		jobs = append(jobs, conn)
	}
	t.Cleanup(func() {
		for _, c := range jobs {
			c.Release()
		}
	})
	for range 3 * int(timeout/(p.period)) {
		res, err := Sweep(ctx, b.pool, b.schema, SweepOptions{})
		require.NoError(t, err)
		require.Empty(t, res.Processes, "a live process whose jobs hold its pool was declared dead")
		b.waitRenewal(t, "busy")
	}
}
