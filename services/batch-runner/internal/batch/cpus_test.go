package batch

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"drover.dev/shared/procattr"
)

// cores is how the benchmark splits the machine: the validator's side (this process, the
// sharded batch-runner processes, the asyncio validator) on one half of the cores, minersim on
// the other, so neither side's figures include waiting for a core the other holds. With fewer
// than two cores, or without taskset to pin the child processes, nothing is pinned.
type cores struct {
	validator, miners []int
	note              string // how the sides were placed, for the cpu line
}

func splitCores() cores {
	n := runtime.NumCPU()
	if n < 2 {
		return cores{note: "1 core: not pinned"}
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return cores{note: "taskset missing: not pinned"}
	}
	var c cores
	for i := range n {
		if i < n/2 {
			c.validator = append(c.validator, i)
		} else {
			c.miners = append(c.miners, i)
		}
	}
	if err := pinSelf(c.validator); err != nil {
		return cores{note: fmt.Sprintf("not pinned: %v", err)}
	}
	c.note = fmt.Sprintf("batch-runner side on CPU %s, minersim on CPU %s", cpuList(c.validator), cpuList(c.miners))
	return c
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// pinned returns name and args prefixed with taskset for cpus, or as they are when nothing is
// pinned. Its callers stop the process themselves, in their cleanups (hence no context); a
// benchmark killed before its cleanups takes the process with it (taskset execs the command,
// which keeps the parent-death signal).
func pinned(cpus []int, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...) //nolint:noctx // see above
	if len(cpus) > 0 {
		cmd = exec.Command("taskset", append([]string{"-c", cpuList(cpus), name}, args...)...) //nolint:noctx // see above
	}
	procattr.DieWithParent(cmd)
	return cmd
}
