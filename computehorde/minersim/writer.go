package minersim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/gorilla/websocket"

	"drover.dev/computehorde/protocol"
)

type outKind int

const (
	outText    outKind = iota
	outDribble         // a text frame written one byte at a time
	outPong
	outClose // a close frame, then the socket is closed
)

// outFrame is one thing for the writer goroutine to put on the socket.
type outFrame struct {
	kind  outKind
	data  []byte
	every time.Duration // outDribble: pause between bytes
	code  int           // outClose: close code; zero means normal closure
	// gate, when set, holds the frame in the writer until it is closed; frames without a gate
	// keep flowing meanwhile.
	gate <-chan struct{}
	// sent, when set, is called after a successful write with the wall clock (unix ns) read
	// just before the write began.
	sent func(unixNano int64)
	// twice sends a text frame two times over in one write (a duplicate message): the copy
	// cannot fall behind, so a validator that reads on reads it.
	twice bool
}

// wire is f's text frame as it goes on the socket, two times over when f.twice.
func (f outFrame) wire() []byte {
	frame := textFrame(f.data)
	if f.twice {
		frame = append(frame, textFrame(f.data)...)
	}
	return frame
}

// writeLoop is the connection's only writer: every frame, pong, ping and close goes through
// it, so no two writes ever interleave on the socket. Gated frames wait in held until their
// gate closes; then all of them that are due go out in one system call.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	ping := time.NewTicker(c.cfg.PingInterval)
	defer ping.Stop()
	var held []outFrame
	for {
		var err error
		select {
		case <-c.ctx.Done():
			return
		case <-ping.C:
			err = c.ws.WriteControl(websocket.PingMessage, nil, c.writeDeadline())
		case <-firstGate(held):
			held, err = c.writeDue(held)
		case f := <-c.out:
			if f.gate != nil {
				held = append(held, f)
				continue
			}
			err = c.writeOne(f)
			if err == nil && f.kind == outClose {
				err = errClosed
			}
		}
		if err != nil {
			c.abort()
			return
		}
	}
}

// errClosed ends the write loop after a close frame went out.
var errClosed = errors.New("close frame sent")

func firstGate(held []outFrame) <-chan struct{} {
	if len(held) == 0 {
		return nil
	}
	return held[0].gate
}

func gateOpen(gate <-chan struct{}) bool {
	select {
	case <-gate:
		return true
	default:
		return false
	}
}

// writeDue writes every held frame whose gate is open, in order, and returns the others. Text
// frames are framed in advance and written together, so a connection's answers due at the same
// instant leave in one system call.
func (c *conn) writeDue(held []outFrame) ([]outFrame, error) {
	var rest, texts []outFrame
	for _, f := range held {
		switch {
		case !gateOpen(f.gate):
			rest = append(rest, f)
		case f.kind == outText:
			texts = append(texts, f)
		default:
			if err := c.writeTexts(texts); err != nil {
				return nil, err
			}
			texts = nil
			if err := c.writeOne(f); err != nil {
				return nil, err
			}
		}
	}
	return rest, c.writeTexts(texts)
}

func (c *conn) writeTexts(fs []outFrame) error {
	if len(fs) == 0 {
		return nil
	}
	var buf []byte
	for _, f := range fs {
		buf = append(buf, f.wire()...)
	}
	nc := c.ws.NetConn()
	if err := nc.SetWriteDeadline(c.writeDeadline()); err != nil {
		return err
	}
	at := time.Now().UnixNano()
	if _, err := nc.Write(buf); err != nil {
		return fmt.Errorf("write %d frames: %w", len(fs), err)
	}
	for _, f := range fs {
		if f.sent != nil {
			f.sent(at)
		}
	}
	return nil
}

// writeOne writes f and reports when it began to f.sent.
func (c *conn) writeOne(f outFrame) error {
	if f.kind == outText && f.twice {
		return c.writeTexts([]outFrame{f}) // both copies in one system call
	}
	at, err := c.write(f)
	if err == nil && f.sent != nil {
		f.sent(at)
	}
	return err
}

// abort ends the connection from the writer's side: the reader's next read fails.
func (c *conn) abort() {
	c.cancel()
	c.ws.Close()
}

func (c *conn) writeDeadline() time.Time { return time.Now().Add(c.cfg.WriteTimeout) }

// write puts one frame on the socket and returns the wall clock (unix ns) read just before.
func (c *conn) write(f outFrame) (int64, error) {
	switch f.kind {
	case outPong:
		return time.Now().UnixNano(), c.ws.WriteControl(websocket.PongMessage, f.data, c.writeDeadline())
	case outClose:
		code := f.code
		if code == 0 || code == websocket.CloseNoStatusReceived {
			code = websocket.CloseNormalClosure
		}
		return time.Now().UnixNano(), c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), c.writeDeadline())
	case outDribble:
		return time.Now().UnixNano(), c.dribble(f.wire(), f.every)
	}
	if err := c.ws.SetWriteDeadline(c.writeDeadline()); err != nil {
		return 0, err
	}
	at := time.Now().UnixNano()
	return at, c.ws.WriteMessage(websocket.TextMessage, f.data)
}

// dribble writes complete, valid text frames (see outFrame.wire) onto the raw socket one byte
// at a time. It is safe because this goroutine is the socket's only writer and gorilla buffers
// nothing between messages.
func (c *conn) dribble(frame []byte, every time.Duration) error {
	nc := c.ws.NetConn()
	for i := range frame {
		if err := nc.SetWriteDeadline(c.writeDeadline()); err != nil {
			return err
		}
		if _, err := nc.Write(frame[i : i+1]); err != nil {
			return fmt.Errorf("dribble byte %d of %d: %w", i, len(frame), err)
		}
		select {
		case <-time.After(every):
		case <-c.ctx.Done():
			return c.ctx.Err()
		}
	}
	return nil
}

// textFrame is an unmasked, final text frame as a server sends it (RFC 6455 section 5.2).
func textFrame(data []byte) []byte {
	frame := []byte{0x81}
	switch n := len(data); {
	case n < 126:
		frame = append(frame, byte(n))
	case n <= 0xffff:
		frame = append(frame, 126)
		frame = binary.BigEndian.AppendUint16(frame, uint16(n))
	default:
		frame = append(frame, 127)
		frame = binary.BigEndian.AppendUint64(frame, uint64(n))
	}
	return append(frame, data...)
}

// enqueue hands a frame to the writer, giving up when the connection is over.
func (c *conn) enqueue(f outFrame) {
	select {
	case c.out <- f:
	case <-c.ctx.Done():
	}
}

// tryEnqueue is for the reader's control-frame handlers, which must never block: a pong that
// does not fit is dropped and the peer pings again.
func (c *conn) tryEnqueue(f outFrame) {
	select {
	case c.out <- f:
	default:
	}
}

// send encodes and enqueues a message as an honest miner would.
func (c *conn) send(msg protocol.Message) {
	data, err := protocol.Encode(msg)
	if err != nil {
		c.cfg.Logger.Error("encode", "message_type", msg.MessageType(), "err", err)
		return
	}
	c.enqueue(outFrame{data: data})
}

// refuse answers a validator the miner will not serve, as upstream does: a GenericError, then
// close. It waits until the writer has sent both.
func (c *conn) refuse(details string) {
	c.m.authFailures.Add(1)
	c.send(&protocol.GenericError{Details: &details})
	c.enqueue(outFrame{kind: outClose})
	<-c.writerDone
}
