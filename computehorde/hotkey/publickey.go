package hotkey

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	schnorrkel "github.com/ChainSafe/go-schnorrkel"
)

// signingContext is the schnorrkel context Substrate (and so Bittensor) signs under.
var signingContext = []byte("substrate")

// signatureLen is the byte length of an sr25519 signature.
const signatureLen = 64

var (
	// ErrBadSignature reports a well-formed signature that does not verify against the key and
	// message.
	ErrBadSignature = errors.New("signature does not verify")

	// ErrMalformedSignature reports a signature that is not 0x-prefixed hex of 64 bytes or not a
	// schnorrkel-marked signature.
	ErrMalformedSignature = errors.New("malformed signature")
)

// PublicKey is a 32-byte sr25519 public key, which is also the Substrate account id.
type PublicKey [32]byte

// ParseAddress returns the public key behind an SS58 address of any network format.
func ParseAddress(address string) (PublicKey, error) {
	_, key, err := DecodeSS58(address)
	return key, err
}

// Address renders the key as a Substrate (format 42) SS58 address.
func (k PublicKey) Address() string {
	address, err := EncodeSS58(k, SubstrateFormat)
	if err != nil {
		panic(err) // unreachable: SubstrateFormat is a valid format
	}
	return address
}

// Hex renders the key as "0x" and lowercase hex, as wallet files store it.
func (k PublicKey) Hex() string {
	return "0x" + hex.EncodeToString(k[:])
}

// Verify checks an sr25519 signature over msg, given as hex with an optional "0x" prefix in
// either case. It returns nil, or an error wrapping ErrMalformedSignature or ErrBadSignature.
func (k PublicKey) Verify(msg []byte, signature string) error {
	sig, err := parseSignature(signature)
	if err != nil {
		return err
	}
	pub, err := schnorrkel.NewPublicKey(k)
	if err != nil {
		return fmt.Errorf("verify for %s: %w", k.Address(), err)
	}
	ok, err := pub.Verify(sig, schnorrkel.NewSigningContext(signingContext, msg))
	if err != nil {
		return fmt.Errorf("verify for %s: %w", k.Address(), err)
	}
	if !ok {
		return ErrBadSignature
	}
	return nil
}

// Verify checks a signature over msg by the holder of an SS58 address.
func Verify(address string, msg []byte, signature string) error {
	key, err := ParseAddress(address)
	if err != nil {
		return err
	}
	return key.Verify(msg, signature)
}

// parseSignature decodes hex into a schnorrkel signature.
func parseSignature(signature string) (*schnorrkel.Signature, error) {
	digits := signature
	if strings.HasPrefix(digits, "0x") || strings.HasPrefix(digits, "0X") {
		digits = digits[2:]
	}
	if len(digits) != 2*signatureLen {
		return nil, fmt.Errorf("%w: %d hex digits, want %d", ErrMalformedSignature, len(digits), 2*signatureLen)
	}
	var raw [signatureLen]byte
	if _, err := hex.Decode(raw[:], []byte(digits)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedSignature, err)
	}
	sig := new(schnorrkel.Signature)
	if err := sig.Decode(raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedSignature, err)
	}
	return sig, nil
}
