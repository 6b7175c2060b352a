package buildworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
}

// stopReason is why the heartbeat stopped a running command.
type stopReason int

const (
	notStopped stopReason = iota
	cancelled
	leaseLost
)

// attempt runs the claimed job's command under its timeout, with the heartbeat running beside it.
func (w *Worker) attempt(ctx context.Context, c jobgraph.Claim) outcome {
	dir, err := os.MkdirTemp("", fmt.Sprintf("build-%d-%d-", c.JobID, c.Attempt))
	if err != nil {
		return outcome{result: queue.BuildFailed, exitCode: -1, err: "create work directory: " + err.Error()}
	}
	defer os.RemoveAll(dir)
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
		w.heartbeat(beatCtx, c, stop, cancel)
	}()
	logs := newLogWriter(ctx, w.Logs, c.JobID, c.Attempt)
	out := run(runCtx, dir, c, logs)
	cancel()
	out.logIncomplete = logs.Close()
	stopBeat()
	<-beatDone
	select {
	case reason := <-stop:
		if reason == cancelled {
			return outcome{result: queue.BuildCancelled, exitCode: -1, err: "cancelled", logIncomplete: out.logIncomplete}
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
// would have run out.
func (w *Worker) heartbeat(ctx context.Context, c jobgraph.Claim, stop chan<- stopReason, cancel func()) {
	tick := time.NewTicker(w.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		state, err := jobgraph.Heartbeat(ctx, w.Pool, c.JobID, c.LeaseToken, w.Lease)
		switch {
		case errors.Is(err, jobgraph.ErrLeaseLost):
			stop <- leaseLost
			cancel()
			return
		case err != nil:
			w.Logger.Warn("heartbeat", "job", c.JobID, "error", err)
		case state == jobgraph.CancelPending:
			stop <- cancelled
			cancel()
			return
		}
	}
}

// run executes the command in dir. The process runs in its own process group, so that killing
// it on cancel or timeout also kills whatever it started.
func run(ctx context.Context, dir string, c jobgraph.Claim, logs *logWriter) outcome {
	asBuiltFile := filepath.Join(dir, ".as_built")
	cmd := exec.CommandContext(ctx, c.Command[0], c.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = environment(dir, asBuiltFile, c)
	cmd.Stdout, cmd.Stderr = logs.Stream("stdout"), logs.Stream("stderr")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	if len(c.Payload) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "payload.json"), c.Payload, 0o600); err != nil {
			return outcome{result: queue.BuildFailed, exitCode: -1, err: "write payload: " + err.Error()}
		}
	}
	err := cmd.Run()
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
