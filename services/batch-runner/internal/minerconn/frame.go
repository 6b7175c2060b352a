package minerconn

import (
	"crypto/rand"
	"encoding/binary"
)

// MaskedFrame builds the bytes of one complete client-to-server websocket text frame (FIN set,
// masked as RFC 6455 requires of a client) carrying payload. The hot phase builds every job
// request's frame before the barrier, so that after the release a writer does nothing but one
// write system call: no framing, no masking, no allocation.
func MaskedFrame(payload []byte) []byte {
	n := len(payload)
	header := 2
	switch {
	case n >= 1<<16:
		header += 8
	case n >= 126:
		header += 2
	}
	frame := make([]byte, header+4+n)
	frame[0] = 0x80 | 0x1 // FIN, text
	switch {
	case n >= 1<<16:
		frame[1] = 0x80 | 127
		binary.BigEndian.PutUint64(frame[2:], uint64(n))
	case n >= 126:
		frame[1] = 0x80 | 126
		binary.BigEndian.PutUint16(frame[2:], uint16(n))
	default:
		frame[1] = 0x80 | byte(n)
	}
	key := frame[header : header+4]
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	body := frame[header+4:]
	for i, b := range payload {
		body[i] = b ^ key[i&3]
	}
	return frame
}
