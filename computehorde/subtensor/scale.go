// Package subtensor talks to a subtensor node, with a SCALE codec written here because no
// Substrate library is at hand: JSON-RPC over a websocket (rpc.go, sign.go, storage.go), the
// decoding of NeuronInfoLite (scale.go, neuron.go), and what a validator needs to set weights
// itself: the V14 runtime metadata's types, storage, calls and signed extensions (metadata.go),
// storage keys (hash.go), the set_weights call (weights.go) and a v4 signed extrinsic
// (extrinsic.go), refused for a runtime whose signed extensions it does not know. Every length
// read from the wire is checked against what is left before anything is allocated.
package subtensor

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShort is returned when the bytes end inside a value.
var ErrShort = errors.New("scale: unexpected end of data")

// decoder reads SCALE values from b in order; the first error sticks and every later read
// returns zero values, so a decode reads straight through and checks err once.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %w", d.off, err)
	}
}

// take returns the next n bytes, or nil once failed.
func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(ErrShort)
		return nil
	}
	out := d.b[d.off : d.off+n]
	d.off += n
	return out
}

func (d *decoder) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// u128 returns a little-endian u128 as its 16 bytes, big-endian (most significant first).
func (d *decoder) u128() [16]byte {
	var out [16]byte
	if b := d.take(16); b != nil {
		for i := range 16 {
			out[i] = b[15-i]
		}
	}
	return out
}

func (d *decoder) bool() bool {
	switch v := d.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail(fmt.Errorf("scale: bool byte %d", v))
		return false
	}
}

func (d *decoder) account() [32]byte {
	var out [32]byte
	copy(out[:], d.take(32))
	return out
}

// compact reads a Compact<uN> of at most 8 bytes (every compact this package reads is u64 or
// narrower).
func (d *decoder) compact() uint64 {
	b0 := d.u8()
	switch b0 & 3 {
	case 0:
		return uint64(b0 >> 2)
	case 1:
		b1 := d.u8()
		return uint64(b0>>2) | uint64(b1)<<6
	case 2:
		rest := d.take(3)
		if rest == nil {
			return 0
		}
		return uint64(binary.LittleEndian.Uint32(append([]byte{b0}, rest...)) >> 2)
	}
	n := int(b0>>2) + 4
	if n > 8 {
		d.fail(fmt.Errorf("scale: compact of %d bytes, at most 8 read here", n))
		return 0
	}
	var buf [8]byte
	copy(buf[:], d.take(n))
	return binary.LittleEndian.Uint64(buf[:])
}

// compactMax reads a compact and fails past limit (a u16 field, for instance).
func (d *decoder) compactMax(limit uint64, what string) uint64 {
	v := d.compact()
	if v > limit {
		d.fail(fmt.Errorf("scale: %s %d out of range (at most %d)", what, v, limit))
		return 0
	}
	return v
}

// length reads a Vec's length, refusing one above most or longer than the bytes left could hold
// at minSize bytes an item.
func (d *decoder) length(most, minSize int, what string) int {
	n := d.compact()
	if d.err == nil && (n > uint64(most) || n*uint64(minSize) > uint64(len(d.b)-d.off)) {
		d.fail(fmt.Errorf("scale: %s of %d items: at most %d, and %d bytes left", what, n, most, len(d.b)-d.off))
		return 0
	}
	return int(n)
}
