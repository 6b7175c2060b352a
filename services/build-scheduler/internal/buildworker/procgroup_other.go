//go:build !linux

package buildworker

import (
	"os/exec"
	"syscall"
)

// runGroup runs cmd as its own process group, killed whole on cancel and by the reaper when the
// worker dies. Outside Linux there is no parent-death signal, and what the command leaves
// running in its group when it exits is not killed.
func runGroup(cmd *exec.Cmd, groups *groupReaper, clock *stageClock) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	groups.ensure()
	if err := cmd.Start(); err != nil {
		return err
	}
	groups.add(cmd.Process.Pid)
	defer groups.remove(cmd.Process.Pid)
	clock.lap(stageStart)
	return cmd.Wait()
}
