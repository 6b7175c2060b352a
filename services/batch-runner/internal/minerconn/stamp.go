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
	// read came back without one, and at is then the instant the read returned.
	recv func(p []byte) (n int, at time.Time, kernel bool, err error)
}

func newStampConn(nc net.Conn) *stampConn {
	return &stampConn{Conn: nc, recv: kernelStamped(nc)}
}

// Read reads and stamps. A read stamped at its return then yields the processor before the
// frames are parsed: when a hundred miners answer in the same millisecond, the runtime wakes
// their readers together, and each used to read, then decode all its frames (~10 µs each)
// before the next reader got a core, so the last connection's stamp carried the decoding of
// every connection run before it. Yielding lets every reader already woken take its socket
// read, and its stamp, before any of them decodes. A kernel stamp was fixed when the data
// arrived, before any reader ran, so no later scheduling can move it and the reader goes
// straight on to decoding.
func (c *stampConn) Read(p []byte) (int, error) {
	if c.recv == nil {
		n, err := c.Conn.Read(p)
		if n > 0 {
			c.lastRead = time.Now()
			runtime.Gosched()
		}
		return n, err
	}
	n, at, kernel, err := c.recv(p)
	if n > 0 {
		c.lastRead = at
		if !kernel {
			runtime.Gosched()
		}
	}
	return n, err
}
