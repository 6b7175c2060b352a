package procattr_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/procattr"
)

// roleEnv tells a re-execution of this test binary which part it plays in
// TestChildDiesWithParent: "parent" starts a grandchild and prints its pid, "grandchild" waits.
const roleEnv = "PROCATTR_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "parent":
		os.Exit(runParent())
	case "grandchild":
		// Long enough to outlast any test; nothing but the parent-death signal ends it sooner.
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runParent starts a grandchild through DieWithParent, prints its pid and waits to be killed.
func runParent() int {
	cmd := exec.Command(os.Args[0]) //nolint:noctx // lives until the parent's death, which the test causes
	cmd.Env = append(os.Environ(), roleEnv+"=grandchild")
	procattr.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start grandchild:", err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	_ = cmd.Wait()
	return 1 // the test kills this process before the grandchild ends
}

// TestChildDiesWithParent SIGKILLs a process that started a child through DieWithParent, and
// requires that the child dies too: what a go test killed by its timeout does to its fleet.
func TestChildDiesWithParent(t *testing.T) {
	t.Parallel()
	parent := exec.CommandContext(t.Context(), os.Args[0])
	parent.Env = append(os.Environ(), roleEnv+"=parent")
	var stderr bytes.Buffer
	parent.Stderr = &stderr
	stdout, err := parent.StdoutPipe()
	require.NoError(t, err)
	procattr.DieWithParent(parent)
	require.NoError(t, parent.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the parent printed no grandchild pid; its stderr: %s", &stderr)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() && alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	require.True(t, alive(pid), "the grandchild runs while its parent does")

	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 5*time.Millisecond,
		"grandchild %d outlived its SIGKILLed parent", pid)
}

// TestDieWithParentKeepsOtherAttributes requires that DieWithParent adds the parent-death signal
// to what the caller set: devrun's children keep their own process group.
func TestDieWithParentKeepsOtherAttributes(t *testing.T) {
	t.Parallel()
	for name, attr := range map[string]*syscall.SysProcAttr{
		"Unset":   nil,
		"Setpgid": {Setpgid: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), "true")
			cmd.SysProcAttr = attr
			procattr.DieWithParent(cmd)
			require.Equal(t, syscall.SIGKILL, cmd.SysProcAttr.Pdeathsig)
			require.Equal(t, attr != nil, cmd.SysProcAttr.Setpgid)
		})
	}
}

// alive reports whether process pid runs. A zombie counts as dead: it has exited, and the init
// process of a container may never reap it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
