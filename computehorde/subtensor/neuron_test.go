package subtensor_test

import (
	"math"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/subtensor"
	"drover.dev/computehorde/subtensor/subtensortest"
)

func TestDecodeNeuronsLite(t *testing.T) {
	t.Parallel()
	good := []subtensortest.Neuron{
		{Hot: subtensortest.Key(1, 1), Cold: subtensortest.Key(1, 2), UID: 0, Netuid: 12, IP: netip.MustParseAddr("203.0.113.7"), Port: 8000, Stakes: []uint64{1_500_000_000, 500_000_000}},
		{Hot: subtensortest.Key(2, 1), Cold: subtensortest.Key(2, 2), UID: 1, Netuid: 12, IP: netip.MustParseAddr("2001:db8::7"), Port: 9000},
		{Hot: subtensortest.Key(3, 1), Cold: subtensortest.Key(3, 2), UID: 2, Netuid: 12, Permit: true, Stakes: []uint64{math.MaxUint64, 5}},
	}
	t.Run("Good", func(t *testing.T) {
		t.Parallel()
		got, err := subtensor.DecodeNeuronsLite(subtensortest.EncodeNeurons(good), 10)
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.Equal(t, subtensor.Neuron{
			Hotkey: subtensortest.Key(1, 1).Address(), Coldkey: subtensortest.Key(1, 2).Address(), UID: 0, Netuid: 12, Active: true,
			IP: netip.MustParseAddr("203.0.113.7"), Port: 8000, StakeRao: 2_000_000_000, LastUpdate: 4_812_345,
		}, got[0])
		require.Equal(t, netip.MustParseAddr("2001:db8::7"), got[1].IP)
		require.Equal(t, netip.IPv4Unspecified(), got[2].IP, "ip 0 serves nothing")
		require.Equal(t, uint64(math.MaxUint64), got[2].StakeRao, "the stake saturates")
		require.True(t, got[2].ValidatorPermit)
	})
	bad := func(change func([]byte) []byte) []byte { return change(subtensortest.EncodeNeurons(good)) }
	tests := []struct {
		name    string
		data    []byte
		max     int
		wantErr string
	}{
		{"Empty", nil, 10, "unexpected end"},
		{"Truncated", bad(func(b []byte) []byte { return b[:len(b)-1] }), 10, "unexpected end"},
		{"Trailing", bad(func(b []byte) []byte { return append(b, 0) }), 10, "1 bytes after the last neuron"},
		{"TooMany", subtensortest.EncodeNeurons(good), 2, "neurons of 3 items: at most 2"},
		{"LengthBeyondTheData", subtensor.AppendCompact(nil, 1_000_000), 2_000_000, "neurons of 1000000 items"},
		{"BadBool", bad(func(b []byte) []byte { b[1+64+2] = 2; return b }), 10, "bool byte 2"},
		{"BadIPType", subtensortest.EncodeNeurons([]subtensortest.Neuron{{Hot: subtensortest.Key(1, 1), IP: netip.MustParseAddr("10.0.0.1"), IPType: 5}}), 10, "ip_type 5"},
		{"UIDOutOfRange", bad(func(b []byte) []byte {
			return append(append(subtensor.AppendCompact(nil, 1), b[1:65]...), append(subtensor.AppendCompact(nil, 70000), b[66:]...)...)
		}), 10, "uid 70000 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := subtensor.DecodeNeuronsLite(tt.data, tt.max)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
