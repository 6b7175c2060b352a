package hotkey

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/blake2b"
)

// SubstrateFormat is the SS58 network format of generic Substrate addresses, which Bittensor
// hotkeys use ("5…" addresses).
const SubstrateFormat = 42

// ss58Prefix is hashed before the payload so SS58 checksums differ from other blake2b uses.
const ss58Prefix = "SS58PRE"

// ss58ChecksumLen is the number of checksum bytes for 32-byte account ids.
const ss58ChecksumLen = 2

var (
	// ErrSS58Checksum reports an address whose checksum does not match its contents, usually a
	// typo.
	ErrSS58Checksum = errors.New("ss58 checksum mismatch")

	// ErrSS58Encoding reports an address that is not valid base58 or whose length is not that of
	// a 32-byte account id.
	ErrSS58Encoding = errors.New("malformed ss58 address")

	// ErrSS58Format reports a network format outside 0..16383, which SS58 cannot express, or one
	// using the reserved two-byte encoding.
	ErrSS58Format = errors.New("invalid ss58 network format")
)

// EncodeSS58 renders a public key as an SS58 address of the given network format.
func EncodeSS58(key PublicKey, format uint16) (string, error) {
	prefix, err := ss58FormatBytes(format)
	if err != nil {
		return "", err
	}
	data := make([]byte, 0, len(prefix)+len(key)+ss58ChecksumLen)
	data = append(data, prefix...)
	data = append(data, key[:]...)
	sum := ss58Checksum(data)
	data = append(data, sum[:ss58ChecksumLen]...)
	return base58Encode(data), nil
}

// DecodeSS58 parses an SS58 address of a 32-byte account id and returns its network format
// and public key. Errors wrap ErrSS58Encoding, ErrSS58Format or ErrSS58Checksum.
func DecodeSS58(address string) (uint16, PublicKey, error) {
	data, err := base58Decode(address)
	if err != nil {
		return 0, PublicKey{}, fmt.Errorf("decode ss58 %q: %w: %w", address, ErrSS58Encoding, err)
	}
	if len(data) == 0 {
		return 0, PublicKey{}, fmt.Errorf("decode ss58 %q: %w: empty", address, ErrSS58Encoding)
	}
	format, prefixLen, err := ss58ParseFormat(data)
	if err != nil {
		return 0, PublicKey{}, fmt.Errorf("decode ss58 %q: %w", address, err)
	}
	var key PublicKey
	if len(data) != prefixLen+len(key)+ss58ChecksumLen {
		return 0, PublicKey{}, fmt.Errorf("decode ss58 %q: %w: %d bytes", address, ErrSS58Encoding, len(data))
	}
	body := data[:prefixLen+len(key)]
	sum := ss58Checksum(body)
	if sum[0] != data[len(body)] || sum[1] != data[len(body)+1] {
		return 0, PublicKey{}, fmt.Errorf("decode ss58 %q: %w", address, ErrSS58Checksum)
	}
	copy(key[:], body[prefixLen:])
	return format, key, nil
}

// ss58Checksum hashes the prefix, network format bytes and key.
func ss58Checksum(data []byte) [blake2b.Size]byte {
	return blake2b.Sum512(append([]byte(ss58Prefix), data...))
}

// ss58FormatBytes encodes a network format: one byte below 64, two bytes up to 16383.
func ss58FormatBytes(format uint16) ([]byte, error) {
	switch {
	case format < 64:
		return []byte{byte(format)}, nil
	case format < 16384:
		first := byte((format&0b1111_1100)>>2) | 0b0100_0000
		second := byte(format>>8) | byte(format&0b11)<<6
		return []byte{first, second}, nil
	default:
		return nil, fmt.Errorf("%w: %d", ErrSS58Format, format)
	}
}

// ss58ParseFormat reverses ss58FormatBytes and says how many bytes the format took.
func ss58ParseFormat(data []byte) (uint16, int, error) {
	switch first := data[0]; {
	case first < 64:
		return uint16(first), 1, nil
	case first < 128:
		if len(data) < 2 {
			return 0, 0, fmt.Errorf("%w: truncated", ErrSS58Encoding)
		}
		lower := first<<2 | data[1]>>6
		upper := data[1] & 0b0011_1111
		return uint16(lower) | uint16(upper)<<8, 2, nil
	default:
		return 0, 0, fmt.Errorf("%w: reserved prefix byte %d", ErrSS58Format, first)
	}
}
