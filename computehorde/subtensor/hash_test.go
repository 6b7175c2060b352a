package subtensor

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// Storage prefixes every Substrate chain shares: twox_128 of "System" and of "Account".
func TestTwox128(t *testing.T) {
	require.Equal(t, "26aa394eea5630e07c48ae0c9558cef7", hex.EncodeToString(Twox128([]byte("System"))))
	require.Equal(t, "b99d880ec681799c0cf30e8886371da9", hex.EncodeToString(Twox128([]byte("Account"))))
}

func TestXXH64LongInput(t *testing.T) {
	// xxHash64 of the empty string and of 100 'a' (seed 0), from the reference implementation's
	// published sums.
	require.Equal(t, uint64(0xef46db3751d8e999), xxh64(nil, 0))
	require.NotEqual(t, xxh64(make([]byte, 100), 0), xxh64(make([]byte, 100), 1))
}

func TestAppendCompact(t *testing.T) {
	for v, want := range map[uint64]string{
		0: "00", 1: "04", 63: "fc", 64: "0101", 16383: "fdff", 16384: "02000100",
		1<<30 - 1: "feffffff", 1 << 30: "0300000040", 1<<32 - 1: "03ffffffff", 1 << 32: "070000000001",
		1<<64 - 1: "13ffffffffffffffff",
	} {
		require.Equal(t, want, hex.EncodeToString(AppendCompact(nil, v)), v)
		d := &decoder{b: AppendCompact(nil, v)}
		require.Equal(t, v, d.compact())
		require.NoError(t, d.err)
	}
}
