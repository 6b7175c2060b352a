package buildworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// outcome is what one attempt produced.
type outcome struct {
	result        queue.BuildOutcome
	asBuilt       string
	exitCode      int
	err           string
	logIncomplete bool
	unreported    bool // the lease ran out: the attempt leaves the job to the reaper
}

// stopReason is why the heartbeat stopped a running command.
type stopReason int

const (
	notStopped stopReason = iota
	cancelled
	leaseLost
	leaseExpired // locally: no heartbeat got through for a lease
)

// attempt runs the claimed job's command under its timeout, with the heartbeat running beside it.
func (w *Worker) attempt(ctx context.Context, c jobgraph.Claim, clock *stageClock) outcome {
	dir, err := w.dirs.take()
	if err != nil {
		return outcome{result: queue.BuildFailed, exitCode: -1, err: "create work directory: " + err.Error()}
	}
	given := false
	defer func() {
		if !given {
			_ = os.RemoveAll(dir)
		}
	}()
	runCtx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	// The heartbeat outlives the command until the last log chunks are stored: a slow or
	// unreachable log store may delay the report, but must not cost the job its lease.
	beatCtx, stopBeat := context.WithCancel(ctx)
	defer stopBeat()
	stop := make(chan stopReason, 1)
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		w.heartbeat(beatCtx, c, runCtx.Done(), stop, cancel)
	}()
	logs := newLogWriter(ctx, w.Logs, c.JobID, c.Attempt)
	w.groups.setLogger(w.Logger)
	out := run(runCtx, dir, c, logs, &w.groups, clock)
	cancel()
	out.logIncomplete = logs.Close()
	clock.lap(stageLogs)
	stopBeat()
	<-beatDone
	w.dirs.give(dir)
	given = true
	clock.lap(stageHeartbeat)
	select {
	case reason := <-stop:
		switch reason {
		case cancelled:
			return outcome{result: queue.BuildCancelled, exitCode: -1, err: "cancelled", logIncomplete: out.logIncomplete}
		case leaseExpired:
			return outcome{unreported: true}
		}
		return outcome{result: queue.BuildFailed, exitCode: -1, err: "lease lost"}
	default:
	}
	if runCtx.Err() == context.DeadlineExceeded && out.result != queue.BuildSucceeded {
		out.err = fmt.Sprintf("timed out after %s", c.Timeout)
	}
	return out
}

// heartbeat extends the lease until ctx ends; it stops the command (cancel) when the job is
// being cancelled or the lease is lost. A failing database is tolerated until the lease itself
// would have run out: from then on the reaper may give the job to another attempt, so a command
// still running (until running is closed) is killed when the last extension sent, or the claim,
// is a lease old, and the attempt reports nothing: the job is the reaper's to hand out again.
func (w *Worker) heartbeat(ctx context.Context, c jobgraph.Claim, running <-chan struct{}, stop chan<- stopReason, cancel func()) {
	tick := time.NewTicker(w.Lease / 3)
	defer tick.Stop()
	// Counted from the claim, not from now: the lease has been running since the claim was sent.
	expiry := time.NewTimer(time.Until(c.Sent.Add(w.Lease)))
	defer expiry.Stop()
	expired := expiry.C
	for {
		select {
		case <-ctx.Done():
			return
		case <-running:
			running, expired = nil, nil
			continue
		case <-expired:
			w.Logger.Warn("lease ran out without a heartbeat; killing the build", "job_id", c.JobID, "attempt", c.Attempt)
			stop <- leaseExpired
			cancel()
			return
		case <-tick.C:
		}
		sent := time.Now()
		state, err := w.beat(ctx, c)
		switch {
		case errors.Is(err, jobgraph.ErrLeaseLost):
			stop <- leaseLost
			cancel()
			return
		case err != nil:
			w.Logger.Warn("heartbeat", "job_id", c.JobID, "error", err)
		case state == jobgraph.CancelPending:
			stop <- cancelled
			cancel()
			return
		default:
			expiry.Reset(time.Until(sent.Add(w.Lease)))
		}
	}
}

// beat extends the lease once, giving up after a third of it so that a hung connection cannot
// hold the heartbeat past the lease.
func (w *Worker) beat(ctx context.Context, c jobgraph.Claim) (jobgraph.JobState, error) {
	ctx, cancel := context.WithTimeout(ctx, w.Lease/3)
	defer cancel()
	return jobgraph.Heartbeat(ctx, w.Pool, c.JobID, c.LeaseToken, w.Lease)
}

// run executes the command in dir, as a process group of its own that dies whole with the
// worker, on cancel or timeout, and when the command itself exits (see runGroup).
func run(ctx context.Context, dir string, c jobgraph.Claim, logs *logWriter, groups *groupReaper, clock *stageClock) outcome {
	asBuiltFile := filepath.Join(dir, ".as_built")
	cmd := exec.CommandContext(ctx, c.Command[0], c.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = environment(dir, asBuiltFile, c)
	cmd.Stdout, cmd.Stderr = logs.Stream("stdout"), logs.Stream("stderr")
	cmd.WaitDelay = 2 * time.Second
	if len(c.Payload) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "payload.json"), c.Payload, 0o600); err != nil {
			return outcome{result: queue.BuildFailed, exitCode: -1, err: "write payload: " + err.Error()}
		}
	}
	clock.lap(stageWorkdir)
	err := runGroup(cmd, groups, clock)
	clock.lap(stageReap)
	defer os.Remove(filepath.Join(dir, "payload.json")) // the directory serves the next build
	defer os.Remove(asBuiltFile)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return outcome{result: queue.BuildSucceeded, asBuilt: asBuilt(asBuiltFile, c)}
	case errors.As(err, &exit):
		return outcome{result: queue.BuildFailed, exitCode: exit.ExitCode(), err: err.Error()}
	default:
		return outcome{result: queue.BuildFailed, exitCode: -1, err: err.Error()}
	}
}

// environment is the job's env over a minimal base: PATH from the worker, HOME and TMPDIR in the
// work directory, and where to find the payload and write the as-built identifier.
func environment(dir, asBuiltFile string, c jobgraph.Claim) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"DROVER_JOB_ID=" + fmt.Sprint(c.JobID), "DROVER_ATTEMPT=" + fmt.Sprint(c.Attempt),
		"DROVER_AS_BUILT_FILE=" + asBuiltFile, "DROVER_PAYLOAD_FILE=" + filepath.Join(dir, "payload.json"),
	}
	for k, v := range c.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// asBuilt is what the command wrote to DROVER_AS_BUILT_FILE, or job-name@id/attempt.
func asBuilt(file string, c jobgraph.Claim) string {
	if b, err := os.ReadFile(file); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s@%d/%d", c.Name, c.JobID, c.Attempt)
}
