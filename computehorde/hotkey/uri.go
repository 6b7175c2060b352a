package hotkey

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	schnorrkel "github.com/ChainSafe/go-schnorrkel"
	"golang.org/x/crypto/blake2b"
)

// DevPhrase is the well-known Substrate development mnemonic behind //Alice, //Bob and friends.
// Keys derived from it are public knowledge: use them in tests only.
const DevPhrase = "bottom drive obey lake curtain smoke basket hold race lonely fit walk"

var (
	// ErrSoftJunction reports a "/soft" derivation step. Bittensor hotkeys never use soft
	// derivation, and we have no external vector to prove ours right, so it is refused.
	ErrSoftJunction = errors.New("soft derivation is not supported")

	// ErrInvalidURI reports a secret URI that is neither a mnemonic, a 0x-prefixed 32-byte seed
	// nor a derivation path.
	ErrInvalidURI = errors.New("invalid secret uri")
)

// FromURI builds a keypair from a Substrate secret URI: "<phrase or 0x seed>[//hard…][///password]".
// A URI that starts with "/" derives from DevPhrase, so "//Alice" is Alice's well-known key.
// The phrase becomes a mini secret Substrate's way (PBKDF2 over the BIP39 entropy, not the BIP39
// seed), so keys match subkey, polkadot-js and btcli.
func FromURI(uri string) (*Keypair, error) {
	secret, path, password := splitURI(uri)
	if secret == "" {
		secret = DevPhrase
	}
	mini, err := miniSecret(secret, password)
	if err != nil {
		return nil, err
	}
	key := mini.ExpandEd25519()
	junctions, err := splitPath(path)
	if err != nil {
		return nil, err
	}
	for _, junction := range junctions {
		next, _, err := key.HardDeriveMiniSecretKey(nil, junctionChainCode(junction))
		if err != nil {
			return nil, fmt.Errorf("derive //%s: %w", junction, err)
		}
		key = next.ExpandEd25519()
	}
	return fromSecret(key)
}

// splitURI separates the secret, the derivation path and the password. The password starts
// at the first "///"; the path at the first "/" before it.
func splitURI(uri string) (secret, path, password string) {
	if i := strings.Index(uri, "///"); i >= 0 {
		uri, password = uri[:i], uri[i+3:]
	}
	if i := strings.Index(uri, "/"); i >= 0 {
		return strings.TrimSpace(uri[:i]), uri[i:], password
	}
	return strings.TrimSpace(uri), "", password
}

// splitPath turns "//a//b" into its hard junctions.
func splitPath(path string) ([]string, error) {
	var junctions []string
	for path != "" {
		if !strings.HasPrefix(path, "//") {
			return nil, fmt.Errorf("derive %q: %w", path, ErrSoftJunction)
		}
		path = path[2:]
		end := strings.Index(path, "/")
		if end < 0 {
			end = len(path)
		}
		if end == 0 {
			return nil, fmt.Errorf("%w: empty junction", ErrInvalidURI)
		}
		junctions = append(junctions, path[:end])
		path = path[end:]
	}
	return junctions, nil
}

// miniSecret turns a 0x seed or a mnemonic into the 32-byte mini secret.
func miniSecret(secret, password string) (*schnorrkel.MiniSecretKey, error) {
	if strings.HasPrefix(secret, "0x") {
		if password != "" {
			return nil, fmt.Errorf("%w: a password applies to a mnemonic, not a seed", ErrInvalidURI)
		}
		return miniSecretFromHex(secret)
	}
	phrase := strings.Join(strings.Fields(secret), " ")
	mini, err := schnorrkel.MiniSecretKeyFromMnemonic(phrase, password)
	if err != nil {
		return nil, fmt.Errorf("%w: mnemonic: %w", ErrInvalidURI, err)
	}
	return mini, nil
}

// miniSecretFromHex parses "0x" and 64 hex digits.
func miniSecretFromHex(seed string) (*schnorrkel.MiniSecretKey, error) {
	raw, err := hex.DecodeString(seed[2:])
	if err != nil || len(raw) != 32 {
		return nil, fmt.Errorf("%w: seed must be 0x and 64 hex digits", ErrInvalidURI)
	}
	mini, err := schnorrkel.NewMiniSecretKeyFromRaw([32]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("mini secret from seed: %w", err)
	}
	return mini, nil
}

// junctionChainCode is Substrate's chain code for a junction: the SCALE encoding of the number
// (u64, little endian) or string (compact length, bytes), zero-padded to 32 bytes, or its
// blake2b-256 when longer.
func junctionChainCode(junction string) [32]byte {
	var encoded []byte
	if n, err := strconv.ParseUint(junction, 10, 64); err == nil {
		encoded = binary.LittleEndian.AppendUint64(nil, n)
	} else {
		encoded = append(scaleCompact(uint64(len(junction))), junction...)
	}
	if len(encoded) > 32 {
		return blake2b.Sum256(encoded)
	}
	var code [32]byte
	copy(code[:], encoded)
	return code
}

// scaleCompact is SCALE's compact integer encoding, enough for string lengths.
func scaleCompact(n uint64) []byte {
	switch {
	case n < 1<<6:
		return []byte{byte(n << 2)}
	case n < 1<<14:
		return binary.LittleEndian.AppendUint16(nil, uint16(n<<2|0b01))
	case n < 1<<30:
		return binary.LittleEndian.AppendUint32(nil, uint32(n<<2|0b10))
	default:
		raw := binary.LittleEndian.AppendUint64(nil, n)
		for raw[len(raw)-1] == 0 {
			raw = raw[:len(raw)-1]
		}
		return append([]byte{byte(len(raw)-4)<<2 | 0b11}, raw...)
	}
}
