package subtensor

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"

	"golang.org/x/crypto/blake2b"
)

// The xxHash64 primes.
const (
	xxPrime1 uint64 = 11400714785074694791
	xxPrime2 uint64 = 14029467366897019727
	xxPrime3 uint64 = 1609587929392839161
	xxPrime4 uint64 = 9650029242287828579
	xxPrime5 uint64 = 2870177450012600261
)

// xxh64 is xxHash64 of b with seed, the hash under Substrate's Twox hashers.
func xxh64(b []byte, seed uint64) uint64 {
	n := len(b)
	var h uint64
	if n >= 32 {
		v1, v2, v3, v4 := seed+xxPrime1+xxPrime2, seed+xxPrime2, seed, seed-xxPrime1
		for len(b) >= 32 {
			v1 = xxRound(v1, binary.LittleEndian.Uint64(b[0:]))
			v2 = xxRound(v2, binary.LittleEndian.Uint64(b[8:]))
			v3 = xxRound(v3, binary.LittleEndian.Uint64(b[16:]))
			v4 = xxRound(v4, binary.LittleEndian.Uint64(b[24:]))
			b = b[32:]
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		for _, v := range []uint64{v1, v2, v3, v4} {
			h = (h^xxRound(0, v))*xxPrime1 + xxPrime4
		}
	} else {
		h = seed + xxPrime5
	}
	h += uint64(n)
	for ; len(b) >= 8; b = b[8:] {
		h ^= xxRound(0, binary.LittleEndian.Uint64(b))
		h = bits.RotateLeft64(h, 27)*xxPrime1 + xxPrime4
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b)) * xxPrime1
		h = bits.RotateLeft64(h, 23)*xxPrime2 + xxPrime3
		b = b[4:]
	}
	for ; len(b) > 0; b = b[1:] {
		h ^= uint64(b[0]) * xxPrime5
		h = bits.RotateLeft64(h, 11) * xxPrime1
	}
	h ^= h >> 33
	h *= xxPrime2
	h ^= h >> 29
	h *= xxPrime3
	h ^= h >> 32
	return h
}

func xxRound(acc, input uint64) uint64 {
	acc += input * xxPrime2
	return bits.RotateLeft64(acc, 31) * xxPrime1
}

// Twox128 is Substrate's twox_128: xxHash64 with seeds 0 and 1, little-endian, concatenated.
func Twox128(b []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, xxh64(b, 0))
	return binary.LittleEndian.AppendUint64(out, xxh64(b, 1))
}

// Blake2b256 is the 32-byte BLAKE2b hash (Substrate's blake2_256).
func Blake2b256(b []byte) []byte {
	h := blake2b.Sum256(b)
	return h[:]
}

func blake2b128(b []byte) []byte {
	h, err := blake2b.New(16, nil)
	if err != nil {
		panic(err) // only for a size outside 1..64
	}
	h.Write(b)
	return h.Sum(nil)
}

// Twox64Hex is "0x" and the hex of Substrate's twox_64 of b (xxHash64, seed 0, little-endian).
func Twox64Hex(b []byte) string {
	return "0x" + hex.EncodeToString(binary.LittleEndian.AppendUint64(nil, xxh64(b, 0)))
}

// Blake2b128Hex is "0x" and the hex of the 16-byte BLAKE2b of b (Substrate's blake2_128).
func Blake2b128Hex(b []byte) string { return "0x" + hex.EncodeToString(blake2b128(b)) }
