package procattr

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel SIGKILL cmd's process when its parent dies, however it dies,
// so that a killed test or make run leaves no child holding ports or rows. It keeps the other
// SysProcAttr fields (Setpgid, for one) and must be called before cmd.Start.
//
// Linux sends the parent-death signal when the thread that started the child exits, not the
// process. The Go runtime ends a thread only when a goroutine locked to it (runtime.LockOSThread)
// returns without unlocking, so a child started from an ordinary goroutine dies with the
// process. A caller that locks its thread must keep it locked for the child's life, as the build
// worker's runGroup does. The setting survives the child's exec (taskset running its command)
// but not its forks: what the child starts needs its own.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
