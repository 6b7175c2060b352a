package signing

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"table":"t","key":{"id":1}}`)
	now := time.Unix(1_700_000_000, 0)
	// What every implementation computes (the Python library's tests check the same value):
	// HMAC-SHA256 with key "s3cret" of "1700000000.<body>".
	require.Equal(t, "t=1700000000,v1=b5ef63e1fe7ae205144c1f1de28d7cba0e8cce8715190de365ad651a7b4eaff1", Sign([]string{"s3cret"}, now, body))
	for name, tc := range map[string]struct {
		header string
		err    error
	}{
		"signed":              {Sign([]string{"s3cret"}, now, body), nil},
		"signed a minute ago": {Sign([]string{"s3cret"}, now.Add(-time.Minute), body), nil},
		"one of two secrets":  {Sign([]string{"new", "s3cret"}, now, body), nil},
		"unsigned":            {"", ErrUnsigned},
		"other secret":        {Sign([]string{"other"}, now, body), ErrBadSignature},
		"other body":          {Sign([]string{"s3cret"}, now, []byte(`{}`)), ErrBadSignature},
		"time changed":        {strings.Replace(Sign([]string{"s3cret"}, now, body), "t=1700000000", "t=1700000001", 1), ErrBadSignature},
		"stale":               {Sign([]string{"s3cret"}, now.Add(-Tolerance-time.Second), body), ErrStale},
		"from the future":     {Sign([]string{"s3cret"}, now.Add(Tolerance+time.Second), body), ErrStale},
		"no time":             {"v1=00", ErrBadSignature},
		"no signature":        {"t=1700000000", ErrBadSignature},
		"signature not hex":   {"t=1700000000,v1=zz", ErrBadSignature},
		"garbage":             {"Bearer abc", ErrBadSignature},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := Verify([]string{"s3cret"}, tc.header, body, now)
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
			}
		})
	}
}

// The worker's signing transport and a function's middleware agree; a call without the
// transport is refused with a 401 problem.
func TestTransportAndMiddleware(t *testing.T) {
	t.Parallel()
	var got []byte
	srv := httptest.NewServer(Middleware([]string{"s3cret"}, 1<<16, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
	})))
	t.Cleanup(srv.Close)

	post := func(c *http.Client) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, bytes.NewReader([]byte(`{"key":{}}`)))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := post(&http.Client{Transport: Transport(Static([]string{"s3cret"}), http.DefaultTransport)})
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"key":{}}`, string(got), "the handler reads the body the signature covered")

	for _, c := range []*http.Client{http.DefaultClient, {Transport: Transport(Static([]string{"other"}), http.DefaultTransport)}} {
		resp = post(c)
		var doc map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		require.InDelta(t, 401, doc["status"], 0)
		require.NotEmpty(t, doc["detail"])
	}
}
