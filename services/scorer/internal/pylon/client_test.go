package pylon

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const hash = "0x" + "0000000000000000000000000000000000000000000000000000000000000abc"

func client(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Client{BaseURL: srv.URL, Identity: "my validator", Token: "tok", Netuid: 12, Timeout: 300 * time.Millisecond, MaxBytes: 256}
}

func TestNeurons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		wantErr string
		want    Neurons
	}{
		{"Good", `{"block":{"number":5,"hash":"` + hash + `"},"neurons":{"A":{"uid":1,"hotkey":"A","last_update":4},"B":{"uid":2,"hotkey":"B"}}}`, "",
			Neurons{Block: 5, Hash: hash, UIDs: map[string]int{"A": 1, "B": 2}, LastUpdate: map[string]int64{"A": 4, "B": 0}}},
		{"BadNeuronsCounted", `{"block":{"number":5,"hash":"` + hash + `"},"neurons":{"A":{"uid":70000,"hotkey":"A"},"B":{"uid":2,"hotkey":"X"},"C":7,"D":{"hotkey":"D"},"E":{"uid":0,"hotkey":"E"}}}`, "",
			Neurons{Block: 5, Hash: hash, UIDs: map[string]int{"E": 0}, LastUpdate: map[string]int64{"E": 0}, Bad: 4}},
		{"NoHash", `{"block":{"number":5},"neurons":{}}`, "block.hash", Neurons{}},
		{"NotJSON", `<html>`, "decode pylon neurons", Neurons{}},
		{"TooLarge", `{"block":{"number":5,"hash":"` + hash + `"},"neurons":{"A":{"uid":1,"hotkey":"` + strings.Repeat("A", 300) + `"}}}`, "more than 256 bytes", Neurons{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := client(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/subnet/12/block/latest/neurons" || r.Header.Get("Authorization") != "Bearer tok" {
					w.WriteHeader(http.StatusForbidden)
					return
				}
				_, _ = w.Write([]byte(tt.body))
			})
			got, err := c.Neurons(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	t.Run("TooSlow", func(t *testing.T) {
		t.Parallel()
		c := client(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		// The server holds the answer for 5 s; the caller's context has no deadline, so only
		// the client's own timeout ends the call with DeadlineExceeded.
		_, err := c.Neurons(context.Background())
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestSetWeights(t *testing.T) {
	t.Parallel()
	t.Run("PutsTheWeightsForTheIdentity", func(t *testing.T) {
		t.Parallel()
		var got string
		c := client(t, func(w http.ResponseWriter, r *http.Request) {
			b := new(bytes.Buffer)
			_, _ = b.ReadFrom(r.Body)
			got = r.Method + " " + r.URL.EscapedPath() + " " + b.String()
			_, _ = w.Write([]byte(`{"detail":"weights update scheduled"}`))
		})
		answer, err := c.SetWeights(context.Background(), map[string]float64{"A": 0.5})
		require.NoError(t, err)
		require.Equal(t, Answer{Status: 200, Body: `{"detail":"weights update scheduled"}`}, answer)
		require.Equal(t, `PUT /api/v1/identity/my%20validator/subnet/12/weights {"weights":{"A":0.5}}`, got)
	})
	t.Run("LongAnswerKeptTruncated", func(t *testing.T) {
		t.Parallel()
		c := client(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(strings.Repeat("x", 10000)))
		})
		answer, err := c.SetWeights(context.Background(), map[string]float64{"A": 1})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadGateway, answer.Status)
		require.Len(t, answer.Body, maxAnswer)
	})
}
