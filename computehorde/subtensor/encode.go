package subtensor

import "encoding/binary"

// encoder appends SCALE values to b.
type encoder struct{ b []byte }

func (e *encoder) u8(v uint8)       { e.b = append(e.b, v) }
func (e *encoder) u16(v uint16)     { e.b = binary.LittleEndian.AppendUint16(e.b, v) }
func (e *encoder) u32(v uint32)     { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64)     { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) raw(b []byte)     { e.b = append(e.b, b...) }
func (e *encoder) compact(v uint64) { e.b = AppendCompact(e.b, v) }

// AppendCompact appends v as a SCALE Compact integer.
func AppendCompact(b []byte, v uint64) []byte {
	switch {
	case v < 1<<6:
		return append(b, byte(v<<2))
	case v < 1<<14:
		return binary.LittleEndian.AppendUint16(b, uint16(v<<2|1))
	case v < 1<<30:
		return binary.LittleEndian.AppendUint32(b, uint32(v<<2|2))
	}
	n := 8
	for n > 4 && v>>(8*(n-1)) == 0 {
		n--
	}
	b = append(b, byte((n-4)<<2|3))
	for i := range n {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}
