package minersim

import (
	"bytes"
	"crypto/rand"
	"fmt"

	"drover.dev/computehorde/protocol"
)

// emit sends the message due at a stage, misbehaving as b says. It reports whether the message
// itself went out (not silenced, not replaced by a disconnect).
func (c *conn) emit(b Behaviour, st Stage, jobUUID string, msg protocol.Message) bool {
	return c.emitFrame(b, st, jobUUID, msg, outFrame{})
}

// emitFrame is emit with the message's frame built from tmpl, which carries what the writer
// must do around it: wait for a gate, report the instant it wrote it.
func (c *conn) emitFrame(b Behaviour, st Stage, jobUUID string, msg protocol.Message, tmpl outFrame) bool {
	if b.silentAt(st) {
		return false
	}
	if b.Disconnect == st {
		c.enqueue(outFrame{kind: outClose})
		return false
	}
	data, err := protocol.Encode(msg)
	if err != nil {
		c.cfg.Logger.Error("encode", "message_type", msg.MessageType(), "err", err)
		return false
	}
	if b.Malformed == st {
		c.enqueue(outFrame{data: data[:len(data)/2]})
	}
	if b.Oversize == st {
		c.enqueue(outFrame{data: oversizeFrame(c.cfg.OversizeBytes)})
	}
	if b.UnknownJob == st && jobUUID != "" {
		c.enqueue(outFrame{data: bytes.ReplaceAll(data, []byte(jobUUID), []byte(newUUID()))})
	}
	f := tmpl
	f.data = data
	if b.Slowloris == st {
		f.kind, f.every = outDribble, b.dribbleEvery()
	}
	f.twice = b.Duplicate == st
	c.enqueue(f)
	if b.StopReading == st {
		c.stopReading()
	}
	return true
}

func (c *conn) stopReading() {
	c.stopOnce.Do(func() { close(c.stopRead) })
}

// oversizeFrame is a well-formed GenericError of exactly n bytes (at least its envelope), so
// only its size is wrong.
func oversizeFrame(n int) []byte {
	const head, tail = `{"message_type":"GenericError","details":"`, `"}`
	pad := max(n-len(head)-len(tail), 0)
	frame := make([]byte, 0, len(head)+pad+len(tail))
	frame = append(frame, head...)
	frame = append(frame, bytes.Repeat([]byte("x"), pad)...)
	return append(frame, tail...)
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
