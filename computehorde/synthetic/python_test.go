package synthetic

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// lookPython returns the path of python3, skipping the test when it is absent: Python is the
// independent decoder for the pickle, zip and Fernet the generators write.
func lookPython(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found; skipping the cross-check against Python")
	}
	return path
}

// runPython runs script with python3, feeding stdin, and returns its stdout. env entries
// ("KEY=value") are added to the inherited environment.
func runPython(t *testing.T, script string, stdin []byte, env ...string) string {
	t.Helper()
	return runPythonIn(t, "", []string{"-c", script}, stdin, env...)
}

// runPythonIn runs python3 with args in dir ("" for the current directory).
func runPythonIn(t *testing.T, dir string, args []string, stdin []byte, env ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), lookPython(t), args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(cmd.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "python stderr:\n%s", stderr.String())
	return stdout.String()
}

// pythonHasCryptography reports whether the cryptography package, which the hashcat runner and
// upstream's Fernet need, is importable.
func pythonHasCryptography(t *testing.T) bool {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), lookPython(t), "-c", "import cryptography.fernet")
	return cmd.Run() == nil
}
