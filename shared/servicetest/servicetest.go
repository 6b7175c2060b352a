// Package servicetest starts a service's run function the way its main does, on a free port, and
// waits until it is ready, so a test can drive it over HTTP.
package servicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/apiclient"
	"drover.dev/shared/config"
)

// Token is the bearer token Config sets up; it is also River UI's password.
const Token = "test-token"

// RiverUIUser is the River UI user name Config sets up.
const RiverUIUser = "operator"

// Config returns the common settings for a service under test on databaseURL: auth on with Token,
// quiet logs, short timeouts.
func Config(databaseURL string) config.Common {
	return config.Common{
		DatabaseURL: databaseURL, APITokens: []string{Token}, RiverUIUser: RiverUIUser,
		LogLevel: "warn", LogFormat: "text", BodyLimit: 1 << 20,
		ReadHeaderTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second,
		IdleTimeout: time.Second, ShutdownTimeout: 10 * time.Second, SoftStopTimeout: 5 * time.Second,
		DBMaxConns: 5, MaxQueued: 10000,
	}
}

// Start runs run with a listener on a free loopback port until the test ends, waits for /readyz
// to answer 200, and returns the base URL. The test fails if run returns an error.
func Start(t testing.TB, run func(ctx context.Context, ln net.Listener, stdout io.Writer) error) string {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	base := "http://" + ln.Addr().String()
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			done <- err
			return true // run ended: fail below rather than wait
		default:
		}
		return apiclient.Answers(t.Context(), base+"/readyz")
	}, 15*time.Second, 20*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("service stopped during start: %v", err)
	default:
	}
	return base
}

// Call sends a JSON request with Token, checks the answer against the service's OpenAPI
// document (RequireDocumented) and decodes the JSON answer into out (when not nil). It returns
// the status code.
func Call(t testing.TB, method, url string, body, out any) int {
	t.Helper()
	return CallAs(t, Token, method, url, body, out)
}

// CallAs is Call with another bearer token (of another scope, or none that is valid).
func CallAs(t testing.TB, token, method, url string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw := readAll(t, resp)
	RequireDocumented(t, req, resp.StatusCode, resp.Header, raw)
	if out != nil && len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, out), "%s %s: %s", method, url, raw)
	}
	return resp.StatusCode
}

// RequireRiverUIQueues checks that the service at base serves River UI behind its login and that,
// logged in, its API lists exactly the queues want (in any order) within a few seconds: a River
// client records its queues once it runs.
func RequireRiverUIQueues(t testing.TB, base string, want ...string) {
	t.Helper()
	status, _ := riverUIGet(t, base+"/riverui/api/queues", false)
	require.Equal(t, http.StatusUnauthorized, status, "River UI without login")
	slices.Sort(want)
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		status, body := riverUIGet(t, base+"/riverui/api/queues", true)
		require.Equal(t, http.StatusOK, status, "River UI queues: %s", body)
		var list struct{ Data []struct{ Name string } }
		require.NoError(t, json.Unmarshal(body, &list))
		var got []string
		for _, q := range list.Data {
			got = append(got, q.Name)
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
		last = fmt.Sprint(got)
	}
	t.Fatalf("River UI lists queues %s, want %v", last, want)
}

func riverUIGet(t testing.TB, url string, login bool) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if login {
		req.SetBasicAuth(RiverUIUser, Token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}
