package minerconn

import (
	"errors"
	"time"

	"github.com/gorilla/websocket"

	"drover.dev/computehorde/protocol"
)

// writeLoop is the connection's only writer. After a failed write the connection is unusable
// (the peer may have half a frame), so it closes the socket and fails everything queued.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	var broken error
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			c.failQueued(ErrClosed)
			return
		}
		for {
			w, ok := c.next()
			if !ok {
				break
			}
			if broken != nil {
				finish(w, SendResult{Err: broken})
				continue
			}
			if w.kind == writeClose {
				_ = c.ws.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
				c.shutdown()
				c.failQueued(ErrClosed)
				return
			}
			res := c.write(w)
			finish(w, res)
			if res.Err != nil {
				broken = res.Err
				c.shutdown()
			}
		}
	}
}

func (c *Conn) next() (write, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return write{}, false
	}
	w := c.queue[0]
	c.queue[0] = write{}
	c.queue = c.queue[1:]
	return w, true
}

func (c *Conn) failQueued(err error) {
	c.mu.Lock()
	c.closing = true
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	for _, w := range q {
		finish(w, SendResult{Err: err})
	}
}

func finish(w write, res SendResult) {
	if w.done != nil {
		w.done(res)
	}
}

// write performs one queued write. A raw write first waits for its gate: the writer goroutine
// is parked on it when the barrier opens, so the frame leaves one wake-up after the release.
func (c *Conn) write(w write) SendResult {
	switch w.kind {
	case writeRaw:
		if w.burst != nil {
			if res, ok := c.parkInBurst(w); ok {
				return res
			}
		}
		if w.armed != nil {
			w.armed()
		}
		select {
		case <-w.gate:
		case <-c.stop:
			return SendResult{Err: ErrClosed}
		}
		nc := c.ws.NetConn()
		before := time.Now()
		_ = nc.SetWriteDeadline(before.Add(c.opts.WriteTimeout))
		_, err := nc.Write(w.data)
		return SendResult{Before: before, After: time.Now(), Err: err}
	case writePong:
		before := time.Now()
		err := c.ws.WriteControl(websocket.PongMessage, w.data, before.Add(c.opts.WriteTimeout))
		return SendResult{Before: before, After: time.Now(), Err: err}
	default:
		before := time.Now()
		_ = c.ws.SetWriteDeadline(before.Add(c.opts.WriteTimeout))
		err := c.ws.WriteMessage(websocket.TextMessage, w.data)
		return SendResult{Before: before, After: time.Now(), Err: err}
	}
}

// readLoop reads until the connection ends. The receive instant is the stamp (see recvstamp.Conn) of
// the socket read that brought the frame's last byte (gorilla never reads past a message it
// returns without needing to), taken before any decoding, so that decoding and handling, of this
// frame or of the ones read with it, never count against the miner.
func (c *Conn) readLoop() {
	defer c.wg.Done()
	for {
		kind, frame, err := c.ws.ReadMessage()
		at := c.stamp.LastRead()
		if err != nil {
			c.shutdown()
			c.handler.Closed(readError(err))
			return
		}
		if kind != websocket.TextMessage && kind != websocket.BinaryMessage {
			continue
		}
		if string(frame) == "PING" {
			continue // upstream miners' keepalive, ignored as upstream does
		}
		msg, err := c.decoder.DecodeFromMiner(frame)
		if err != nil {
			c.handler.BadFrame(at, err)
			c.replyGenericError(err)
			continue
		}
		c.handler.Message(at, msg)
	}
}

func (c *Conn) replyGenericError(err error) {
	var de *protocol.DecodeError
	if !errors.As(err, &de) {
		return
	}
	if payload, encErr := protocol.Encode(de.GenericErrorReply()); encErr == nil {
		c.Send(payload, nil)
	}
}

// ErrFrameTooLarge reports a frame over Options.MaxFrameSize; the connection was closed.
var ErrFrameTooLarge = errors.New("frame too large")

func readError(err error) error {
	if errors.Is(err, websocket.ErrReadLimit) {
		return ErrFrameTooLarge
	}
	return err
}
