package subtensor

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Storage prefixes every Substrate chain shares: twox_128 of "System" and of "Account". Longer
// inputs (32 bytes and more take another path) are checked against polkadot.js's xxhash in
// TestPolkadotJSVectors.
func TestTwox128(t *testing.T) {
	t.Parallel()
	require.Equal(t, uint64(0xef46db3751d8e999), xxh64(nil, 0), "xxHash64 of nothing, seed 0")
	require.Equal(t, "26aa394eea5630e07c48ae0c9558cef7", hex.EncodeToString(Twox128([]byte("System"))))
	require.Equal(t, "b99d880ec681799c0cf30e8886371da9", hex.EncodeToString(Twox128([]byte("Account"))))
}

// TestCompact decodes the SCALE specification's compact vectors, and encodes them back.
func TestCompact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		hex  string
		want uint64
	}{
		{"00", 0}, {"04", 1}, {"a8", 42}, {"fc", 63}, {"0101", 64}, {"1501", 69}, {"fdff", 16383},
		{"02000100", 16384}, {"feffffff", 1<<30 - 1}, {"0300000040", 1 << 30},
		{"13ffffffffffffffff", math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.hex, func(t *testing.T) {
			t.Parallel()
			b, err := hex.DecodeString(tt.hex)
			require.NoError(t, err)
			d := &decoder{b: b}
			require.Equal(t, tt.want, d.compact())
			require.NoError(t, d.err)
			require.Equal(t, len(b), d.off)
			require.Equal(t, tt.hex, hex.EncodeToString(AppendCompact(nil, tt.want)))
		})
	}
	t.Run("MoreThan8Bytes", func(t *testing.T) {
		t.Parallel()
		d := &decoder{b: append([]byte{0x17}, make([]byte, 9)...)}
		d.compact()
		require.ErrorContains(t, d.err, "compact of 9 bytes")
	})
}
