package hotkey

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBase58(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		raw     []byte
		encoded string
	}{
		{name: "Empty", raw: []byte{}, encoded: ""},
		{name: "SingleZero", raw: []byte{0}, encoded: "1"},
		{name: "LeadingZeros", raw: []byte{0, 0, 0x28, 0x7f, 0xb4, 0xcd}, encoded: "11233QC4"},
		{name: "HelloWorld", raw: []byte("Hello World!"), encoded: "2NEpo7TZRRrLZSi2U"},
		{name: "QuickFox", raw: []byte("The quick brown fox jumps over the lazy dog."), encoded: "USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.encoded, base58Encode(tt.raw))
			decoded, err := base58Decode(tt.encoded)
			require.NoError(t, err)
			require.Equal(t, tt.raw, decoded)
		})
	}
}

func TestBase58DecodeRejectsForeignCharacters(t *testing.T) {
	t.Parallel()

	for _, input := range []string{"0", "O", "I", "l", "abc+", "é"} {
		t.Run(input, func(t *testing.T) {
			t.Parallel()

			_, err := base58Decode(input)
			require.ErrorIs(t, err, errBase58Char)
		})
	}
}
