//go:build !linux

package procattr

import "os/exec"

// DieWithParent does nothing outside Linux: there is no parent-death signal, and a child the
// parent does not stop itself outlives it.
func DieWithParent(*exec.Cmd) {}
