package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChildrenDieWithDevrun requires that a process devrun starts gets the parent-death signal
// (shared/procattr's test shows the kernel delivers it) and keeps its own process group: a
// killed make run or go test leaves no fleet holding the ports, and Ctrl-C still reaches devrun
// alone, which stops its children in order.
func TestChildrenDieWithDevrun(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	opts := options{bin: filepath.Dir(sleep), logs: t.TempDir()}
	s := &service{name: "sleeper"}
	require.NoError(t, s.start(t.Context(), opts, filepath.Base(sleep), []string{"60"}, nil))
	f := &fleet{extra: []*service{s}}
	t.Cleanup(func() { f.stop(newPrinter(testLog{t})) })
	require.Equal(t, syscall.SIGKILL, s.cmd.SysProcAttr.Pdeathsig)
	require.True(t, s.cmd.SysProcAttr.Setpgid)
}
