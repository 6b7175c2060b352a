// Package minerconn is the validator's websocket connection to one miner: one writer goroutine
// fed by a queue, so that nothing else writes to the socket (but a Burst, while the writer is
// parked for it) and a send never blocks its caller; one reader goroutine that bounds frames,
// honours read deadlines, answers pings through the writer and hands every decoded message to a
// Handler with the instant it was read.
//
// Every write carries a deadline. A miner that stops reading fills its socket buffer; its write
// is then cut off by the deadline, reported to the caller, and the connection is closed. It
// delays nobody else because nobody else shares its writer, and a Burst's write never blocks.
package minerconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/recvstamp"
)

// ErrClosed is the error of a send queued on a connection that is closing or broken.
var ErrClosed = errors.New("connection closed")

// Handler receives what the reader goroutine reads. Calls for one connection come from one
// goroutine, in the order the frames arrived; at is when the frame's last byte reached this
// machine (on Linux the kernel's receive timestamp, elsewhere the return of the socket read that
// brought it), taken before decoding, so it is the fairest receive time the validator can give.
// It carries a monotonic reading, so durations against time.Now() instants are monotonic.
type Handler interface {
	// Message is a decoded frame.
	Message(at time.Time, m protocol.Message)
	// BadFrame is a frame that could not be decoded; the connection carries on.
	BadFrame(at time.Time, err error)
	// Closed is called once when reading ends: the miner closed, a deadline passed, a frame
	// was too large, or Close was called.
	Closed(err error)
}

// Options bound a connection. Zero values take the defaults below.
type Options struct {
	// MaxFrameSize is the largest frame read; a larger one ends the connection.
	MaxFrameSize int64
	// WriteTimeout bounds every write.
	WriteTimeout time.Duration
	// HandshakeTimeout bounds the websocket upgrade.
	HandshakeTimeout time.Duration
	// ReadTimeout is the first read deadline; the batch moves it with SetReadDeadline per stage.
	ReadTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = protocol.DefaultMaxFrameSize
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 30 * time.Second
	}
	return o
}

// SendResult is how one send went: Before and After bracket the write system call.
type SendResult struct {
	Before, After time.Time
	Err           error
}

type writeKind int

const (
	writeMessage writeKind = iota // a payload gorilla frames
	writeRaw                      // complete frames written as they are, after gate
	writePong
	writeClose
)

type write struct {
	kind  writeKind
	data  []byte
	gate  <-chan struct{}
	armed func() // called when the writer starts waiting on gate
	done  func(SendResult)
	burst *burstSend // a raw write a Burst may make for the writer
}

// Conn is one open connection. Its methods are safe for concurrent use.
type Conn struct {
	ws      *websocket.Conn
	stamp   *recvstamp.Conn
	raw     syscall.RawConn // the socket a Burst writes to; nil when it cannot
	opts    Options
	handler Handler
	decoder protocol.Decoder

	mu      sync.Mutex
	queue   []write
	closing bool
	wake    chan struct{} // capacity 1: the writer has work
	stop    chan struct{} // closed by Close
	stopped sync.Once

	wg sync.WaitGroup
}

// Dial connects to url, then starts the reader and writer goroutines.
func Dial(ctx context.Context, url string, h Handler, opts Options) (*Conn, error) {
	opts = opts.withDefaults()
	var stamp *recvstamp.Conn
	dialer := websocket.Dialer{
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			stamp = recvstamp.Wrap(nc)
			return stamp, nil
		},
		HandshakeTimeout: opts.HandshakeTimeout,
		// Small buffers: thousands of connections, and no message of a batch is large.
		ReadBufferSize: 2048, WriteBufferSize: 2048,
		WriteBufferPool: writeBuffers,
	}
	ws, resp, err := dialer.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c := &Conn{
		ws: ws, stamp: stamp, raw: rawConn(ws.NetConn(), stamp), opts: opts, handler: h,
		decoder: protocol.Decoder{MaxFrameSize: int(opts.MaxFrameSize)},
		wake:    make(chan struct{}, 1), stop: make(chan struct{}),
	}
	ws.SetReadLimit(opts.MaxFrameSize)
	_ = ws.SetReadDeadline(time.Now().Add(opts.ReadTimeout))
	// gorilla answers pings and closes by writing from the reader goroutine; route both
	// through the writer instead so it stays the only one writing.
	ws.SetPingHandler(func(data string) error {
		c.enqueue(write{kind: writePong, data: []byte(data)})
		return nil
	})
	ws.SetCloseHandler(func(int, string) error { return nil })
	c.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

var writeBuffers = &sync.Pool{}

// Send queues payload (one JSON message) and returns at once; done, if not nil, is called from
// the writer goroutine when the write ends.
func (c *Conn) Send(payload []byte, done func(SendResult)) {
	c.enqueue(write{kind: writeMessage, data: payload, done: done})
}

// SendAt queues complete frames (see MaskedFrame) to be written in one system call as soon as
// gate is closed. Nothing queued after it is written before it. armed, if not nil, is called
// when the writer is parked on the gate, so the caller can release only once every writer is
// waiting; it is not called when the write fails before that.
func (c *Conn) SendAt(gate <-chan struct{}, frames []byte, armed func(), done func(SendResult)) {
	c.enqueue(write{kind: writeRaw, data: frames, gate: gate, armed: armed, done: done})
}

// SetReadDeadline moves the read deadline: the reader gives up on a silent miner at t.
func (c *Conn) SetReadDeadline(t time.Time) { _ = c.ws.NetConn().SetReadDeadline(t) }

// Close sends a close frame if the writer is free, closes the socket and waits for both
// goroutines. Sends still queued fail with ErrClosed.
func (c *Conn) Close() {
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		c.queue = append(c.queue, write{kind: writeClose})
	}
	c.mu.Unlock()
	c.signal()
	select {
	case <-c.stop:
	case <-time.After(c.opts.WriteTimeout):
		c.shutdown() // the writer is stuck behind a slow write; cut it off
	}
	c.wg.Wait()
}

func (c *Conn) enqueue(w write) {
	c.mu.Lock()
	if c.closing && w.kind != writeClose {
		c.mu.Unlock()
		if w.done != nil {
			w.done(SendResult{Err: ErrClosed})
		}
		return
	}
	c.queue = append(c.queue, w)
	c.mu.Unlock()
	c.signal()
}

func (c *Conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// shutdown closes the socket once; the reader's pending read fails and it returns.
func (c *Conn) shutdown() {
	c.stopped.Do(func() {
		close(c.stop)
		_ = c.ws.NetConn().Close()
	})
}
