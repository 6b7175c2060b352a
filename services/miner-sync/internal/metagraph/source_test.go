package metagraph

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		body       string
		maxBytes   int64
		maxEntries int
		wantErr    string
		wantBad    []bool // per entry: DecodeErr set
	}{
		{"Good", `{"netuid":12,"block":7,"miners":[{"uid":1,"hotkey":"h","coldkey":"c","ip":"10.0.0.1","port":1,"stake":1,"validator":true}]}`, 1024, 10, "", []bool{false}},
		{"EmptyList", `{"netuid":12,"block":7,"miners":[]}`, 1024, 10, "", []bool{}},
		{"BadEntryKept", `{"netuid":12,"block":7,"miners":[{"uid":"one"},{"uid":2},7]}`, 1024, 10, "", []bool{true, false, true}},
		{"HugeStakeIsABadEntry", `{"netuid":12,"block":7,"miners":[{"uid":1,"stake":1e400}]}`, 1024, 10, "", []bool{true}},
		{"TooManyBytes", `{"netuid":12,"block":7,"miners":[]}`, 10, 10, "more than 10 bytes", nil},
		{"TooManyEntries", `{"netuid":12,"block":7,"miners":[{},{},{}]}`, 1024, 2, "3 entries, at most 2", nil},
		{"NotJSON", `<html>`, 1024, 10, "decode metagraph", nil},
		{"NoMiners", `{"netuid":12,"block":7}`, 1024, 10, "are required", nil},
		{"NoBlock", `{"netuid":12,"miners":[]}`, 1024, 10, "are required", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap, err := Decode(strings.NewReader(tt.body), tt.maxBytes, tt.maxEntries)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 12, snap.Netuid)
			require.Equal(t, int64(7), snap.Block)
			require.Len(t, snap.Entries, len(tt.wantBad))
			for i, bad := range tt.wantBad {
				require.Equal(t, bad, snap.Entries[i].DecodeErr != nil, "entry %d", i)
			}
		})
	}
}

func TestHTTPSource(t *testing.T) {
	t.Parallel()

	serve := func(t *testing.T, h http.HandlerFunc) string {
		t.Helper()
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	fetch := func(url string) (Snapshot, error) {
		src := &HTTPSource{URL: url, Timeout: 200 * time.Millisecond, MaxBytes: 64, MaxEntries: 10}
		return src.Fetch(context.Background())
	}

	t.Run("Good", func(t *testing.T) {
		t.Parallel()
		url := serve(t, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"netuid":1,"block":2,"miners":[]}`))
		})
		snap, err := fetch(url)
		require.NoError(t, err)
		require.Equal(t, int64(2), snap.Block)
	})
	t.Run("ErrorStatus", func(t *testing.T) {
		t.Parallel()
		url := serve(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
		_, err := fetch(url)
		require.ErrorContains(t, err, "status 502")
	})
	t.Run("TooLarge", func(t *testing.T) {
		t.Parallel()
		url := serve(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(strings.Repeat(" ", 65))) })
		_, err := fetch(url)
		require.ErrorIs(t, err, ErrTooLarge)
	})
	t.Run("TooLargeStreamed", func(t *testing.T) {
		t.Parallel()
		url := serve(t, func(w http.ResponseWriter, _ *http.Request) {
			for range 10 { // no Content-Length: chunks until the limit trips
				_, _ = w.Write([]byte(strings.Repeat(" ", 16)))
				w.(http.Flusher).Flush()
			}
		})
		_, err := fetch(url)
		require.ErrorIs(t, err, ErrTooLarge)
	})
	t.Run("TooSlow", func(t *testing.T) {
		t.Parallel()
		url := serve(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		// The server holds the answer for 5 s; the caller's context has no deadline, so only
		// the client's own timeout ends the call with DeadlineExceeded.
		_, err := fetch(url)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("StringHidesCredentials", func(t *testing.T) {
		t.Parallel()
		src := &HTTPSource{URL: "https://user:secret@chain.example/metagraph?token=abc"}
		require.Equal(t, "https://chain.example/metagraph", src.String())
	})
}

func TestFileSource(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	path := filepath.Join(dir, "metagraph.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"netuid":1,"block":3,"miners":[]}`), 0o600))

	snap, err := (&FileSource{Path: path, MaxBytes: 64, MaxEntries: 10}).Fetch(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(3), snap.Block)

	_, err = (&FileSource{Path: path, MaxBytes: 8, MaxEntries: 10}).Fetch(context.Background())
	require.ErrorIs(t, err, ErrTooLarge)

	_, err = (&FileSource{Path: filepath.Join(dir, "missing.json"), MaxBytes: 64, MaxEntries: 10}).Fetch(context.Background())
	require.ErrorIs(t, err, os.ErrNotExist)
}
