package minersim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPylon(t *testing.T) {
	t.Parallel()
	f := startFleet(t, Config{Miners: 2, Netuid: 7, Block: 500})
	p := NewPylon(f, "tok")
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	do := func(t *testing.T, method, path, token, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	miner0 := f.Miners()[0]

	t.Run("NeuronsOfTheLatestBlock", func(t *testing.T) {
		t.Parallel()
		var got struct {
			Block struct {
				Number int64  `json:"number"`
				Hash   string `json:"hash"`
			} `json:"block"`
			Neurons map[string]pylonNeuron `json:"neurons"`
		}
		getJSONAuth(t, srv.URL+"/api/v1/subnet/7/block/latest/neurons", "tok", &got)
		require.Equal(t, int64(500), got.Block.Number)
		require.Equal(t, BlockHash(500), got.Block.Hash)
		require.Len(t, got.Block.Hash, 66)
		require.Len(t, got.Neurons, 2+len(DefaultValidators()))
		n := got.Neurons[miner0.Hotkey]
		require.Equal(t, pylonAxon{IP: miner0.IP, Port: miner0.Port, Protocol: 4}, n.AxonInfo)
		require.Equal(t, 0, n.UID)
	})
	t.Run("RefusesWithoutToken", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, http.StatusUnauthorized, do(t, http.MethodGet, "/api/v1/subnet/7/block/latest/neurons", "", ""))
		require.Equal(t, http.StatusUnauthorized, do(t, http.MethodGet, "/api/v1/subnet/7/block/latest/neurons", "bad", ""))
	})
	t.Run("OtherSubnetOrFutureBlock", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, http.StatusNotFound, do(t, http.MethodGet, "/api/v1/subnet/8/block/latest/neurons", "tok", ""))
		require.Equal(t, http.StatusNotFound, do(t, http.MethodGet, "/api/v1/subnet/7/block/99999/neurons", "tok", ""))
	})
	t.Run("WeightsRecorded", func(t *testing.T) {
		t.Parallel()
		status := do(t, http.MethodPut, "/api/v1/identity/validator/subnet/7/weights", "tok", `{"weights":{"`+miner0.Hotkey+`":0.75}}`)
		require.Equal(t, http.StatusOK, status)
		var sets []WeightsSet
		getJSONAuth(t, srv.URL+"/weights-sets", "", &sets)
		require.NotEmpty(t, sets)
		found := false
		for _, s := range sets {
			found = found || (s.Identity == "validator" && s.Weights[miner0.Hotkey] == 0.75 && s.Block == 500)
		}
		require.True(t, found, "%+v", sets)
	})
	t.Run("BadWeightsRefused", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{`{}`, `{"weights":{}}`, `{"weights":{"5Nobody":1}}`, `{"weights":{"` + miner0.Hotkey + `":-1}}`, `nope`} {
			status := do(t, http.MethodPut, "/api/v1/identity/validator/subnet/7/weights", "tok", body)
			require.Equal(t, http.StatusUnprocessableEntity, status, body)
		}
	})
}

func getJSONAuth(t *testing.T, url, token string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}
