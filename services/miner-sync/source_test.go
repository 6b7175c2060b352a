package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/miner-sync/internal/metagraph"
)

func TestSourceOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		want    string // the source's String, or the error's text
		wantErr bool
	}{
		{"None", Config{}, "", false},
		{"Pylon", Config{MetagraphURL: "pylon+http://pylon:8000", Netuid: 12, PylonToken: "t"}, "pylon+http://pylon:8000 netuid 12", false},
		{"PylonTLS", Config{MetagraphURL: "pylon+https://pylon.example", Netuid: 1}, "pylon+https://pylon.example netuid 1", false},
		{"PylonBadNetuid", Config{MetagraphURL: "pylon+http://pylon:8000", Netuid: 70000}, "MINER_SYNC_BITTENSOR_NETUID", true},
		{"HTTP", Config{MetagraphURL: "http://fleet/metagraph"}, "http://fleet/metagraph", false},
		{"File", Config{MetagraphURL: "file:///tmp/m.json"}, "file:/tmp/m.json", false},
		{"Unknown", Config{MetagraphURL: "ftp://x"}, `scheme "ftp"`, true},
		{"PylonAddress", Config{PylonAddress: "pylon:8000", Netuid: 12}, "pylon+http://pylon:8000 netuid 12", false},
		{"PylonAddressTLS", Config{PylonAddress: "https://pylon.example", Netuid: 12}, "pylon+https://pylon.example netuid 12", false},
		{"MetagraphURLWins", Config{MetagraphURL: "file:///m.json", PylonAddress: "pylon:8000"}, "file:/m.json", false},
		{"NetworkFinney", Config{Network: "finney", Netuid: 12}, "subtensor+wss://entrypoint-finney.opentensor.ai:443 netuid 12", false},
		{"NetworkTest", Config{Network: "test", Netuid: 12}, "subtensor+wss://test.finney.opentensor.ai:443 netuid 12", false},
		{"NetworkHostPort", Config{Network: "10.0.0.5:9944", Netuid: 12}, "subtensor+ws://10.0.0.5:9944 netuid 12", false},
		{"Subtensor", Config{MetagraphURL: "subtensor+ws://node:9944", Netuid: 3}, "subtensor+ws://node:9944 netuid 3", false},
		{"NetworkBad", Config{Network: "nowhere"}, `"nowhere" is not finney, test or host:port`, true},
		{"PylonWinsOverNetwork", Config{PylonAddress: "pylon:8000", Network: "finney", Netuid: 1}, "pylon+http://pylon:8000 netuid 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src, err := sourceOf(tt.cfg)
			if tt.wantErr {
				require.ErrorContains(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				require.Nil(t, src)
				return
			}
			require.Equal(t, tt.want, src.String())
			if p, ok := src.(*metagraph.PylonSource); ok {
				require.Equal(t, tt.cfg.PylonToken, p.Token)
			}
		})
	}
}

func TestCheckNamesAMissingOrBadSource(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, errors.Join(Config{HTTPAddr: ":8081"}.Check()...), "no metagraph source: set MINER_SYNC_METAGRAPH_URL")
	require.ErrorContains(t, errors.Join(Config{HTTPAddr: ":8081", MetagraphURL: "gopher://x"}.Check()...), `scheme "gopher"`)
	require.Empty(t, Config{HTTPAddr: ":8081", MetagraphURL: "subtensor+wss://node:443"}.Check())
	require.Len(t, Config{HTTPAddr: "8081", MetagraphURL: "gopher://x"}.Check(), 2, "every problem, not the first")
}
