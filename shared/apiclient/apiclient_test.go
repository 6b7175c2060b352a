package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDo(t *testing.T) {
	t.Parallel()

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"https://drover.dev/problems/unauthorized"}`))
			return
		}
		var in map[string]string
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"echo": in["say"], "type": r.Header.Get("Content-Type")})
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()

	t.Run("SendsJSONAndDecodes", func(t *testing.T) {
		t.Parallel()
		var out map[string]string
		status, err := Client{Token: "tok"}.Do(ctx, http.MethodPost, srv.URL, map[string]string{"say": "hi"}, &out)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, map[string]string{"echo": "hi", "type": "application/json"}, out)
	})
	t.Run("FailureCarriesTheProblem", func(t *testing.T) {
		t.Parallel()
		status, err := Client{Token: "wrong"}.Do(ctx, http.MethodGet, srv.URL, nil, nil)
		require.Equal(t, http.StatusUnauthorized, status)
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.Contains(t, se.Body, "problems/unauthorized")
	})
}
