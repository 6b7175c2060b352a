package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/populate-worker/internal/signing"
)

// With FUNCTION_SECRET the worker signs its calls to function makes: the example energy
// function, which checks them as an external function would, refuses a call without the
// signature, one signed with another secret or too long ago, and makes every key the worker asks.
func TestSignedFunctionMakes(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Examples: true, ExamplesSeed: true, MinSchedulingInterval: time.Millisecond, FunctionSecret: []string{"s3cret"}})
	var seed struct {
		SignalIDs []int64 `json:"signal_ids"`
	}
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": 4}, &seed))

	body := []byte(`{"table":"example_signal_energy","key":{"signal_id":` + strconv.FormatInt(seed.SignalIDs[0], 10) + `}}`)
	for name, header := range map[string]string{
		"unsigned":     "",
		"other secret": signing.Sign([]string{"other"}, time.Now(), body),
		"stale":        signing.Sign([]string{"s3cret"}, time.Now().Add(-signing.Tolerance-time.Minute), body),
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/examples/functions/energy", bytes.NewReader(body))
		require.NoError(t, err)
		if header != "" {
			req.Header.Set(signing.Header, header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var doc struct {
			Status int
			Detail string
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), name)
		require.Equal(t, http.StatusUnauthorized, doc.Status, name)
		require.NotEmpty(t, doc.Detail, name)
	}

	var res populateResult
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/v1/tables/example_signal_energy/populate?wait=30",
		map[string]any{"processes": 2}, &res))
	require.Equal(t, "done", res.State, "%+v", res.ErrorList)
	require.Equal(t, 4, res.SuccessCount, "every call was signed and accepted")
}
