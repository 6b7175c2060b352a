package hotkey

import (
	"encoding/hex"
	"fmt"

	schnorrkel "github.com/ChainSafe/go-schnorrkel"
)

// Keypair is an sr25519 secret key with its public key. It is safe for concurrent use.
type Keypair struct {
	secret *schnorrkel.SecretKey
	public PublicKey
}

// FromSeed builds the keypair Substrate derives from a 32-byte mini secret ("secretSeed" in a
// wallet file), expanding it the ed25519 way as substrate and py-sr25519-bindings do.
func FromSeed(seed [32]byte) (*Keypair, error) {
	mini, err := schnorrkel.NewMiniSecretKeyFromRaw(seed)
	if err != nil {
		return nil, fmt.Errorf("mini secret from seed: %w", err)
	}
	return fromSecret(mini.ExpandEd25519())
}

// fromSecret computes the public half of an expanded secret key.
func fromSecret(secret *schnorrkel.SecretKey) (*Keypair, error) {
	pub, err := secret.Public()
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return &Keypair{secret: secret, public: pub.Encode()}, nil
}

// PublicKey returns the keypair's public key.
func (k *Keypair) PublicKey() PublicKey {
	return k.public
}

// Address returns the keypair's SS58 (format 42) address, the hotkey string ComputeHorde sends.
func (k *Keypair) Address() string {
	return k.public.Address()
}

// Sign signs msg in the "substrate" context and returns "0x" and 128 lowercase hex digits.
// Signatures are randomised, so signing the same message twice gives different strings that
// both verify.
func (k *Keypair) Sign(msg []byte) string {
	sig, err := k.secret.Sign(schnorrkel.NewSigningContext(signingContext, msg))
	if err != nil {
		// Signing only fails when crypto/rand fails, which since Go 1.24 it never reports.
		panic(fmt.Sprintf("sr25519 sign: %v", err))
	}
	raw := sig.Encode()
	return "0x" + hex.EncodeToString(raw[:])
}
