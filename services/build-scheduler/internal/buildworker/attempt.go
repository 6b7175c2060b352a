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
}

// attempt runs the build's command under its timeout. The context ends early when River cancels
// the build's River job (River UI's Cancel, the group's cancel), when the process loses its
// liveness, and at shutdown; the command's process group is killed then (see run).
func (w *Worker) attempt(ctx context.Context, b jobgraph.Build, clock *stageClock) outcome {
	dir, err := w.dirs.take()
	if err != nil {
		return outcome{result: queue.BuildFailed, exitCode: -1, err: "create work directory: " + err.Error()}
	}
	runCtx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	logs := newLogWriter(ctx, w.Logs, b.JobID, b.Attempt)
	w.groups.setLogger(w.Logger)
	out := run(runCtx, dir, b, logs, &w.groups, clock)
	cancel()
	out.logIncomplete = logs.Close()
	w.dirs.give(dir)
	clock.lap(stageLogs)
	if runCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil && out.result != queue.BuildSucceeded {
		out.err = fmt.Sprintf("timed out after %s", b.Timeout)
	}
	return out
}

// run executes the command in dir, as a process group of its own that dies whole with the
// worker, on cancel or timeout, and when the command itself exits (see runGroup).
func run(ctx context.Context, dir string, b jobgraph.Build, logs *logWriter, groups *groupReaper, clock *stageClock) outcome {
	asBuiltFile := filepath.Join(dir, ".as_built")
	cmd := exec.CommandContext(ctx, b.Command[0], b.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = environment(dir, asBuiltFile, b)
	cmd.Stdout, cmd.Stderr = logs.Stream("stdout"), logs.Stream("stderr")
	cmd.WaitDelay = 2 * time.Second
	if len(b.Payload) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "payload.json"), b.Payload, 0o600); err != nil {
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
		return outcome{result: queue.BuildSucceeded, asBuilt: asBuilt(asBuiltFile, b)}
	case errors.As(err, &exit):
		return outcome{result: queue.BuildFailed, exitCode: exit.ExitCode(), err: err.Error()}
	default:
		return outcome{result: queue.BuildFailed, exitCode: -1, err: err.Error()}
	}
}

// environment is the job's env over a minimal base: PATH from the worker, HOME and TMPDIR in the
// work directory, and where to find the payload and write the as-built identifier.
func environment(dir, asBuiltFile string, b jobgraph.Build) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"DROVER_JOB_ID=" + fmt.Sprint(b.JobID), "DROVER_ATTEMPT=" + fmt.Sprint(b.Attempt),
		"DROVER_AS_BUILT_FILE=" + asBuiltFile, "DROVER_PAYLOAD_FILE=" + filepath.Join(dir, "payload.json"),
	}
	for k, v := range b.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// asBuilt is what the command wrote to DROVER_AS_BUILT_FILE, or job-name@id/attempt.
func asBuilt(file string, b jobgraph.Build) string {
	if b, err := os.ReadFile(file); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s@%d/%d", b.Name, b.JobID, b.Attempt)
}
