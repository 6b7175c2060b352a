package web

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/logging"
)

func TestAccessLogKeepsProbesAndScrapesAtDebug(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger, err := logging.New(&buf, "info", "text")
	require.NoError(t, err)
	s, err := New(Config{Tokens: []string{"good"}}, logger, Check{Name: "database", Func: func(context.Context) error { return nil }})
	require.NoError(t, err)

	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/riverui/api/health-checks/complete", "/riverui/api/jobs?state=running", "/riverui/"} {
		s.Echo.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
	}
	require.Empty(t, buf.String(), "probes and scrapes log nothing at info")

	s.Echo.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/v1/nothing", nil))
	require.Contains(t, buf.String(), "path=/v1/nothing")
	s.Echo.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/riverui/api/jobs/retry", nil))
	require.Contains(t, buf.String(), "path=/riverui/api/jobs/retry", "a change made through River UI logs at info")
	require.Contains(t, buf.String(), "duration_ms=", "the access log's duration is in milliseconds")
}
