package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGraphCommand runs the graph command the demo prints, as a user pastes it, against a stub
// scheduler: with the demo's token the graph reaches dot, and with a refused token nothing does
// (curl -f), where the 401's problem+json used to become an empty SVG.
func TestGraphCommand(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is needed to run the printed graph command")
		}
		t.Skip("curl not found: the printed graph command cannot run here")
	}
	const graph = "digraph group { fetch -> link }\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer it's-the-token" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"unauthorized","status":401}`))
			return
		}
		if r.URL.Path != "/v1/groups/7/graph" || r.URL.Query().Get("format") != "dot" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(graph))
	}))
	t.Cleanup(srv.Close)

	// paste runs the printed command in a fresh folder, with a dot that copies its input to its
	// output, and returns what group.svg holds.
	paste := func(t *testing.T, token string) string {
		t.Helper()
		dir := t.TempDir()
		bin := filepath.Join(dir, "bin")
		require.NoError(t, os.Mkdir(bin, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(bin, "dot"), []byte("#!/bin/sh\ncat\n"), 0o755))
		cmd := exec.CommandContext(t.Context(), "sh", "-c", graphCommand(srv.URL, token, 7))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out) // the pipeline's status is dot's
		svg, err := os.ReadFile(filepath.Join(dir, "group.svg"))
		require.NoError(t, err)
		return string(svg)
	}

	t.Run("TokenAccepted", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, graph, paste(t, "it's-the-token"))
	})
	t.Run("TokenRefused", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, paste(t, "another-token"))
	})
}
