package hotkey

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// aliceWallet is a hotkey file in the layout btcli writes, holding //Alice.
const aliceWallet = `{"accountId": "0xd43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d", ` +
	`"publicKey": "0xd43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d", ` +
	`"secretPhrase": null, ` +
	`"secretSeed": "0xe5be9a5092b81bca64be81d212e7f2f9eba183bb7a90954f7b76361f6edb5c0a", ` +
	`"ss58Address": "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"}`

func TestParseWallet(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		file    string
		address string
		want    error
	}{
		{name: "Seed", file: aliceWallet, address: aliceAddress},
		{
			name:    "PhraseOnly",
			file:    `{"secretPhrase": "` + DevPhrase + `", "ss58Address": "5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV"}`,
			address: "5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV",
		},
		{
			name: "AddressMismatch",
			file: `{"secretSeed": "0xe5be9a5092b81bca64be81d212e7f2f9eba183bb7a90954f7b76361f6edb5c0a", "ss58Address": "` + bobAddress + `"}`,
			want: ErrWalletMismatch,
		},
		{
			name: "PublicKeyMismatch",
			file: `{"secretSeed": "0xe5be9a5092b81bca64be81d212e7f2f9eba183bb7a90954f7b76361f6edb5c0a", "publicKey": "0x` + bobPublicHex + `"}`,
			want: ErrWalletMismatch,
		},
		{name: "NoSecret", file: `{"ss58Address": "` + aliceAddress + `"}`, want: ErrInvalidURI},
		{name: "BadSeed", file: `{"secretSeed": "0x1234"}`, want: ErrInvalidURI},
		{name: "Encrypted", file: "$NACLabcdef", want: ErrEncryptedWallet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			key, err := ParseWallet([]byte(tt.file))
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.address, key.Address())
		})
	}
}

func TestLoadWallet(t *testing.T) {
	t.Parallel()

	path := filepath.Join(t.TempDir(), "default")
	require.NoError(t, os.WriteFile(path, []byte(aliceWallet), 0o600))

	key, err := LoadWallet(path)
	require.NoError(t, err)
	require.Equal(t, aliceAddress, key.Address())

	_, err = LoadWallet(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
