package buildworker

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// startGroup starts cmd as the leader of a process group of its own, with the parent-death
// signal set to SIGKILL, and returns a function that waits for it to exit and then kills the
// rest of its group. The caller must be locked to its OS thread (see runGroup): Linux sends the
// parent-death signal when the thread that forked the child exits, not the process.
func startGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd.Start()
}

// runGroup runs cmd as its own process group under the worker's reaper and returns cmd.Wait's
// error. Once the leader exits, whatever it left behind in its group is killed before the
// leader is reaped: a build step's background processes do not outlive the step, and the group
// id cannot have been reused yet because the unreaped leader still holds it.
func runGroup(cmd *exec.Cmd, groups *groupReaper, clock *stageClock) error {
	runtime.LockOSThread() // for the command's whole life: see startGroup
	defer runtime.UnlockOSThread()
	groups.ensure()
	if err := startGroup(cmd); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	groups.add(pgid)
	clock.lap(stageStart)
	waitExited(pgid)
	clock.lap(stageRun)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	groups.remove(pgid)
	return cmd.Wait()
}

// waitExited blocks until process pid has exited, without reaping it.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
