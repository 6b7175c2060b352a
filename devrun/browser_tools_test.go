package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/procattr"
)

// installPlaywright installs the pinned playwright-core under .data/browsertest (gitignored) when
// it is not there yet, and returns that folder.
func installPlaywright(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, ".data", "browsertest")
	var pkg struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err == nil {
		_ = json.Unmarshal(b, &pkg)
	}
	if pkg.Version == playwrightVersion {
		return dir
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	cmd := exec.CommandContext(t.Context(), "npm", "install", "--prefix", dir, "--no-save", "--no-package-lock", "--no-audit", "--no-fund",
		"playwright-core@"+playwrightVersion)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm install playwright-core: %s", out)
	return dir
}

// buildCommands builds every command of the workspace, as make build does, into a temporary folder.
func buildCommands(t *testing.T, root string) string {
	t.Helper()
	list := exec.CommandContext(t.Context(), "go", "list", "-f", "{{if eq .Name \"main\"}}{{.Dir}}{{end}}", "work")
	list.Dir = root
	out, err := list.Output()
	require.NoError(t, err, "go list the commands")
	bin := t.TempDir()
	build := exec.CommandContext(t.Context(), "go", append([]string{"build", "-o", bin + "/"}, strings.Fields(string(out))...)...)
	build.Dir = root
	msg, err := build.CombinedOutput()
	require.NoError(t, err, "go build the commands: %s", msg)
	return bin
}

// requireFreePorts fails early, and clearly, when something (make run? a test's fleet left
// behind?) holds the ports make run's fleet needs, naming the process that holds each.
func requireFreePorts(t *testing.T, bin string) {
	t.Helper()
	require.NoError(t, checkPorts(t.Context(), options{bin: bin}), "this test runs make run's fleet on its ports")
}

// findJob asks the service's River UI API for the newest job of a kind in a state, and returns
// what its page must show: the kind, the state and every top-level key of its args.
func findJob(t *testing.T, url, token string, want jobExpectation) jobCheck {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("%s/riverui/api/jobs?state=%s&kinds=%s&limit=1", url, want.state, want.kind), nil)
	require.NoError(t, err)
	req.SetBasicAuth(riverUIUser, token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list struct {
		Data []struct {
			ID   int64  `json:"id"`
			Args string `json:"args"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.NotEmpty(t, list.Data, "%s: no %s job in state %s after the demos", url, want.kind, want.state)
	var args map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(list.Data[0].Args), &args))
	// The job page shows the state under "State"; a bare state name could come from elsewhere.
	texts := []string{want.kind, "State\n" + strings.ToUpper(want.state[:1]) + want.state[1:]}
	for key := range args {
		texts = append(texts, fmt.Sprintf("%q", key))
	}
	slices.Sort(texts[2:])
	return jobCheck{Check: want.check, ID: list.Data[0].ID, Texts: texts}
}

// runBrowser runs testdata/riverui-browser.mjs on spec and fails with its output when it fails.
func runBrowser(t *testing.T, spec browserSpec) {
	t.Helper()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "spec.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "riverui-browser.mjs"), path)
	cmd.Stdout, cmd.Stderr = &out, &out
	procattr.DieWithParent(cmd)
	err = cmd.Run()
	t.Log(out.String())
	require.NoError(t, err, "the browser did not see what an operator must see (output above)")
}

// testLog writes devrun's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
