package hotkey

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A signature made by sr25519-crust (the Rust schnorrkel binding) in its public test suite
// (test/ds.cpp): the development phrase's root key signing "this is a message".
const (
	crustPublicHex = "46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a"
	crustMessage   = "this is a message"
	crustSignature = "0x4e172314444b8f820bb54c22e95076f220ed25373e5c178234aa6c211d29271244b947e3ff3418ff6b45fd1df1140c8cbff69fc58ee6dc96df70936a2bb74b82"
)

func TestVerifyExternalSignature(t *testing.T) {
	t.Parallel()

	key := mustPublicKey(t, crustPublicHex)
	// Flip a digit of s, leaving R a valid point, so the check itself must fail.
	tampered := crustSignature[:80] + "0" + crustSignature[81:]
	require.NotEqual(t, crustSignature, tampered)

	tests := []struct {
		name      string
		message   string
		signature string
		want      error
	}{
		{name: "Valid", message: crustMessage, signature: crustSignature},
		{name: "UppercaseHex", message: crustMessage, signature: "0X" + strings.ToUpper(crustSignature[2:])},
		{name: "NoPrefix", message: crustMessage, signature: crustSignature[2:]},
		{name: "TamperedSignature", message: crustMessage, signature: tampered, want: ErrBadSignature},
		{name: "TamperedMessage", message: "this is a messagE", signature: crustSignature, want: ErrBadSignature},
		{name: "Short", message: crustMessage, signature: crustSignature[:100], want: ErrMalformedSignature},
		{name: "NotHex", message: crustMessage, signature: "0x" + strings.Repeat("zz", 64), want: ErrMalformedSignature},
		{name: "NotMarkedSchnorrkel", message: crustMessage, signature: crustSignature[:128] + "02", want: ErrMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := key.Verify([]byte(tt.message), tt.signature)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()

	alice, err := FromURI("//Alice")
	require.NoError(t, err)
	bob, err := FromURI("//Bob")
	require.NoError(t, err)
	msg := []byte("5Fvali:5Fmin:1740830400")

	signature := alice.Sign(msg)
	require.Regexp(t, "^0x[0-9a-f]{128}$", signature)
	require.NotEqual(t, signature, alice.Sign(msg), "signatures are randomised")

	require.NoError(t, alice.PublicKey().Verify(msg, signature))
	require.NoError(t, Verify(aliceAddress, msg, signature))
	require.ErrorIs(t, Verify(bobAddress, msg, signature), ErrBadSignature)
	require.ErrorIs(t, Verify(aliceAddress, msg, bob.Sign(msg)), ErrBadSignature)
	require.ErrorIs(t, Verify("5Fvali…", msg, signature), ErrSS58Encoding)
}
