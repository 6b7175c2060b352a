package hotkey

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// Public keys of the Substrate development accounts, as published by subkey.
const (
	alicePublicHex = "d43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d"
	bobPublicHex   = "8eaf04151687736326c9fea17e25fc5287613693c912909cb226aa4794f26a48"
	aliceAddress   = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"
	bobAddress     = "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty"
)

func mustPublicKey(t *testing.T, hexKey string) PublicKey {
	t.Helper()

	raw, err := hex.DecodeString(hexKey)
	require.NoError(t, err)
	require.Len(t, raw, 32)
	return PublicKey(raw)
}

func TestSS58Vectors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		key     string
		format  uint16
		address string
	}{
		{name: "AliceSubstrate", key: alicePublicHex, format: SubstrateFormat, address: aliceAddress},
		{name: "BobSubstrate", key: bobPublicHex, format: SubstrateFormat, address: bobAddress},
		{name: "AlicePolkadot", key: alicePublicHex, format: 0, address: "15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5"},
		{name: "AliceKusama", key: alicePublicHex, format: 2, address: "HNZata7iMYWmk5RvZRTiAsSDhV8366zq2YGb3tLH5Upf74F"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			key := mustPublicKey(t, tt.key)
			address, err := EncodeSS58(key, tt.format)
			require.NoError(t, err)
			require.Equal(t, tt.address, address)

			format, decoded, err := DecodeSS58(tt.address)
			require.NoError(t, err)
			require.Equal(t, tt.format, format)
			require.Equal(t, key, decoded)
		})
	}
}

func TestSS58TwoByteFormatRoundTrips(t *testing.T) {
	t.Parallel()

	key := mustPublicKey(t, alicePublicHex)
	for _, format := range []uint16{64, 255, 1000, 16383} {
		address, err := EncodeSS58(key, format)
		require.NoError(t, err)
		got, decoded, err := DecodeSS58(address)
		require.NoError(t, err)
		require.Equal(t, format, got)
		require.Equal(t, key, decoded)
	}
	_, err := EncodeSS58(key, 16384)
	require.ErrorIs(t, err, ErrSS58Format)
}

func TestDecodeSS58Errors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		address string
		want    error
	}{
		{name: "ChecksumTypo", address: "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQZ", want: ErrSS58Checksum},
		{name: "SwappedCharacters", address: "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKuQtY", want: ErrSS58Checksum},
		{name: "NotBase58", address: "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKut0Y", want: ErrSS58Encoding},
		{name: "Truncated", address: "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGK", want: ErrSS58Encoding},
		{name: "Empty", address: "", want: ErrSS58Encoding},
		{name: "Placeholder", address: "5Fvali…", want: ErrSS58Encoding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, _, err := DecodeSS58(tt.address)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestPublicKeyAddressAndHex(t *testing.T) {
	t.Parallel()

	key := mustPublicKey(t, alicePublicHex)
	require.Equal(t, aliceAddress, key.Address())
	require.Equal(t, "0x"+alicePublicHex, key.Hex())

	parsed, err := ParseAddress(aliceAddress)
	require.NoError(t, err)
	require.Equal(t, key, parsed)
}
