package hotkey

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromURIDevAccounts(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		uri     string
		address string
	}{
		{name: "Alice", uri: "//Alice", address: aliceAddress},
		{name: "Bob", uri: "//Bob", address: bobAddress},
		{name: "AliceWithPhrase", uri: DevPhrase + "//Alice", address: aliceAddress},
		{name: "AliceStash", uri: "//Alice//stash", address: "5GNJqTPyNqANBkUVMN1LPPrxXnFouWXoe2wNSmmEoLctxiZY"},
		// The bare development phrase; its public key is the sr25519-crust test key below.
		{name: "DevPhrase", uri: DevPhrase, address: "5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV"},
		{name: "AliceSeed", uri: "0xe5be9a5092b81bca64be81d212e7f2f9eba183bb7a90954f7b76361f6edb5c0a", address: aliceAddress},
		{name: "ExtraSpaces", uri: "  bottom drive obey lake curtain smoke basket hold race lonely fit walk  //Alice", address: aliceAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			key, err := FromURI(tt.uri)
			require.NoError(t, err)
			require.Equal(t, tt.address, key.Address())
		})
	}
}

func TestFromURIPasswordChangesKey(t *testing.T) {
	t.Parallel()

	plain, err := FromURI("//Alice")
	require.NoError(t, err)
	withPassword, err := FromURI("//Alice///secret")
	require.NoError(t, err)
	require.NotEqual(t, plain.Address(), withPassword.Address())
}

func TestFromURIErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		uri  string
		want error
	}{
		{name: "SoftJunction", uri: "//Alice/soft", want: ErrSoftJunction},
		{name: "EmptyJunction", uri: "//", want: ErrInvalidURI},
		{name: "BadChecksum", uri: "bottom drive obey lake curtain smoke basket hold race lonely fit fit", want: ErrInvalidURI},
		{name: "NotWords", uri: "not a mnemonic", want: ErrInvalidURI},
		{name: "ShortSeed", uri: "0xe5be9a", want: ErrInvalidURI},
		{name: "SeedWithPassword", uri: "0xe5be9a5092b81bca64be81d212e7f2f9eba183bb7a90954f7b76361f6edb5c0a///pw", want: ErrInvalidURI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, err := FromURI(tt.uri)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestJunctionChainCode(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		junction string
		prefix   []byte
	}{
		{name: "String", junction: "Alice", prefix: []byte{5 << 2, 'A', 'l', 'i', 'c', 'e'}},
		{name: "Number", junction: "7", prefix: []byte{7, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			code := junctionChainCode(tt.junction)
			require.Equal(t, tt.prefix, code[:len(tt.prefix)])
			require.Equal(t, make([]byte, 32-len(tt.prefix)), code[len(tt.prefix):])
		})
	}
}

func TestScaleCompact(t *testing.T) {
	t.Parallel()

	tests := []struct {
		n    uint64
		want []byte
	}{
		{n: 0, want: []byte{0x00}},
		{n: 63, want: []byte{0xfc}},
		{n: 64, want: []byte{0x01, 0x01}},
		{n: 16383, want: []byte{0xfd, 0xff}},
		{n: 16384, want: []byte{0x02, 0x00, 0x01, 0x00}},
		{n: 1 << 30, want: []byte{0x03, 0x00, 0x00, 0x00, 0x40}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, scaleCompact(tt.n), "n=%d", tt.n)
	}
}
