package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunServesPylon starts the program with a Pylon stub and asks it for the neurons.
func TestRunServesPylon(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-miners", "2", "-base-ip", "127.0.10.2", "-netuid", "3", "-pylon", "127.0.0.1:0", "-pylon-token", "tok"}, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan())
	pylon, ok := strings.CutPrefix(lines.Text(), "minersim: pylon ")
	require.True(t, ok, lines.Text())

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, pylon+"/api/v1/subnet/3/block/latest/neurons", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	for lines.Scan() {
	}
	require.NoError(t, <-done)
}
