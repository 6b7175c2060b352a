package minersim

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/protocol"
)

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

func TestFleetMetagraph(t *testing.T) {
	t.Parallel()

	f := startFleet(t, Config{Miners: 2, Netuid: 49, Block: 1234})
	var raw map[string]any
	getJSON(t, f.ControlURL()+"/metagraph", &raw)
	require.Equal(t, []string{"block", "miners", "netuid"}, sortedKeys(raw))
	first := raw["miners"].([]any)[0].(map[string]any)
	require.Equal(t, []string{"coldkey", "hotkey", "ip", "port", "stake", "uid", "validator"}, sortedKeys(first))

	var g Metagraph
	getJSON(t, f.ControlURL()+"/metagraph", &g)
	require.Equal(t, 49, g.Netuid)
	require.Equal(t, int64(1234), g.Block)
	require.Len(t, g.Miners, 2+len(DefaultValidators()))
	for i, m := range f.Miners() {
		require.Equal(t, MetagraphEntry{UID: i, Hotkey: m.Hotkey, Coldkey: m.Coldkey, IP: m.IP, Port: m.Port}, g.Miners[i])
	}
	require.Equal(t, "127.0.0.2", g.Miners[0].IP)
	require.Equal(t, "127.0.0.3", g.Miners[1].IP)
	alice := g.Miners[2]
	require.Equal(t, aliceKey(t).Address(), alice.Hotkey)
	require.True(t, alice.Validator)
	require.InDelta(t, 100_000.0, alice.Stake, 1e-9)
	require.False(t, g.Miners[5].Validator, "the inactive validator has no permit")
}

// TestFleetDeterministicKeys pins miner 0's hotkey so that runs stay reproducible.
func TestFleetDeterministicKeys(t *testing.T) {
	t.Parallel()

	keys, err := deriveMinerKeys(DefaultKeySeed, 2)
	require.NoError(t, err)
	again, err := deriveMinerKeys(DefaultKeySeed, 2)
	require.NoError(t, err)
	require.Equal(t, keys[0].hot.Address(), again[0].hot.Address())
	require.NotEqual(t, keys[0].hot.Address(), keys[1].hot.Address())
	require.NotEqual(t, keys[0].hot.Address(), keys[0].cold)
}

func TestFleetArrivalsEndpoint(t *testing.T) {
	t.Parallel()

	f := startFleet(t, Config{Miners: 2, KeepFrames: true})
	for _, m := range f.Miners() {
		v := dialMiner(t, m, aliceKey(t), aliceKey(t).Address())
		v.auth()
		expect[*protocol.V0ExecutorManifestRequest](v)
	}
	var all, one []Arrival
	getJSON(t, f.ControlURL()+"/arrivals", &all)
	require.Len(t, all, 2)
	getJSON(t, f.ControlURL()+"/arrivals?miner=1&message_type=ValidatorAuthForMiner", &one)
	require.Len(t, one, 1)
	require.Equal(t, 1, one[0].Miner)
	_, err := protocol.DecodeFromValidator([]byte(one[0].Frame))
	require.NoError(t, err, "the kept frame is verbatim")

	var stats []MinerStats
	getJSON(t, f.ControlURL()+"/stats", &stats)
	require.Len(t, stats, 2)
	require.Equal(t, int64(1), stats[1].Connections)
	require.Zero(t, stats[1].DecodeErrors)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.ControlURL()+"/arrivals?miner=x", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
