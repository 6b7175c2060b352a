// Package recvstamp stamps what a TCP connection reads with the instant it reached this
// machine: on Linux the kernel's receive timestamp (SO_TIMESTAMPNS), elsewhere the instant the
// read returned. A validator times miners' answers with it and the simulated miners time the
// validator's job requests with it, so both sides measure what the network delivered, not
// when their reader got a core.
package recvstamp

import (
	"net"
	"runtime"
	"time"
)

// Conn notes when the data of each read from the socket reached this machine. A frame's
// receive instant is then when its last byte arrived, not when the reader got round to parsing
// it: frames that arrive together share one instant, whatever decoding and handling the frames
// before them cost. Only one goroutine may read (the connection's reader, and before it starts,
// the handshake), so the stamp needs no lock.
//
// Where the kernel stamps received data (Linux, TCP; see kernelStamped) the instant is the
// kernel's, so it does not wait for our goroutine to get a core either; elsewhere, or when the
// kernel leaves a read unstamped, it is the instant our read returned.
type Conn struct {
	net.Conn
	lastRead time.Time
	kernel   bool
	// recv, when not nil, reads with the kernel's receive timestamp; kernel is false when the
	// read came back without one, and at is then the instant the read returned.
	recv func(p []byte) (n int, at time.Time, kernel bool, err error)
}

// Wrap turns on kernel receive timestamps for nc where the platform has them and returns the
// stamping connection.
func Wrap(nc net.Conn) *Conn {
	return &Conn{Conn: nc, recv: kernelStamped(nc)}
}

// LastRead is the receive instant of the data the last read with data returned.
func (c *Conn) LastRead() time.Time { return c.lastRead }

// LastReadKernel reports whether that instant was the kernel's stamp rather than the instant
// the read returned (tests wait on it for the machine's stamping to be on).
func (c *Conn) LastReadKernel() bool { return c.kernel }

// KernelStamping reports whether the kernel was asked to stamp this connection's reads.
func (c *Conn) KernelStamping() bool { return c.recv != nil }

// Read reads, stamps, and then yields the processor before the frames are parsed.
//
// For a read stamped when it returns, the yield protects the stamps: when a hundred peers
// write in the same millisecond, the runtime wakes their readers together, and each used to
// read, then decode all its frames (~10 µs each) before the next reader got a core, so the last
// connection's stamp carried the decoding of every connection run before it. A kernel stamp is
// fixed on arrival and no yield can move it (batch-runner's completion error measured the same
// with and without). The yield is kept for those reads too because it still orders the work: a
// reader woken while a release's writers are runnable lets them write before it decodes.
func (c *Conn) Read(p []byte) (int, error) {
	n, at, kernel, err := c.read(p)
	if n > 0 {
		c.lastRead, c.kernel = at, kernel
		runtime.Gosched()
	}
	return n, err
}

func (c *Conn) read(p []byte) (int, time.Time, bool, error) {
	if c.recv == nil {
		n, err := c.Conn.Read(p)
		return n, time.Now(), false, err
	}
	return c.recv(p)
}

// Listener wraps every connection it accepts with Wrap; an HTTP server serving it hands the
// *Conn to a handler that hijacks the connection (a websocket upgrade, for one).
type Listener struct{ net.Listener }

// Accept waits for the next connection and wraps it.
func (l Listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(nc), nil
}
