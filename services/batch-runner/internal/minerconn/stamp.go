package minerconn

import (
	"net"
	"runtime"
	"time"
)

// stampConn notes when the data of each read from the socket reached this machine. A frame's
// receive instant is then when its last byte arrived, not when the reader got round to parsing
// it: frames that arrive together share one instant, whatever decoding and handling the frames
// before them cost. Only the reader goroutine (and, before it starts, the handshake) reads, so
// lastRead needs no lock.
//
// Where the kernel stamps received data (Linux, TCP; see kernelStamped) the instant is the
// kernel's, so it does not wait for our goroutine to get a core either; elsewhere, or when the
// kernel leaves a read unstamped, it is the instant our read returned.
type stampConn struct {
	net.Conn
	lastRead time.Time
	// recv, when not nil, reads with the kernel's receive timestamp; kernel is false when the
	// read came back without one, and at is then the instant the read returned (the tests wait
	// on kernel for the machine's stamping to be on).
	recv func(p []byte) (n int, at time.Time, kernel bool, err error)
}

func newStampConn(nc net.Conn) *stampConn {
	return &stampConn{Conn: nc, recv: kernelStamped(nc)}
}

// Read reads, stamps, and then yields the processor before the frames are parsed.
//
// For a read stamped when it returns, the yield protects the stamps: when a hundred miners
// answer in the same millisecond, the runtime wakes their readers together, and each used to
// read, then decode all its frames (~10 µs each) before the next reader got a core, so the last
// connection's stamp carried the decoding of every connection run before it. A kernel stamp is
// fixed on arrival and no yield can move it (the completion error measured the same with and
// without). The yield is kept for those reads too because it still orders the work: a reader
// woken while a release's writers are runnable (minersim's progress messages come back during
// the send burst) lets them write before it decodes. Without it the send spread was no better
// and possibly worse, at no measurable CPU cost either way; see the README's Benchmark section.
func (c *stampConn) Read(p []byte) (int, error) {
	n, at, err := c.read(p)
	if n > 0 {
		c.lastRead = at
		runtime.Gosched()
	}
	return n, err
}

func (c *stampConn) read(p []byte) (int, time.Time, error) {
	if c.recv == nil {
		n, err := c.Conn.Read(p)
		return n, time.Now(), err
	}
	n, at, _, err := c.recv(p)
	return n, at, err
}
