//go:build unix

package minerconn

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"drover.dev/computehorde/recvstamp"
)

// rawConn returns the socket a burst may write to directly: stamp's TCP socket when the
// websocket runs over stamp as it is (no TLS in between); nil otherwise.
func rawConn(ws net.Conn, stamp *recvstamp.Conn) syscall.RawConn {
	if stamp == nil || ws != net.Conn(stamp) {
		return nil
	}
	tc, ok := stamp.Conn.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// tryWrite makes one non-blocking write of p to the socket and returns how much of it the
// socket buffer took; a full buffer is not an error.
func (c *Conn) tryWrite(p []byte) (int, error) {
	var n int
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), p)
			if !errors.Is(werr, syscall.EINTR) {
				return true
			}
		}
	})
	n = max(n, 0)
	if errors.Is(werr, syscall.EAGAIN) {
		werr = nil
	}
	if err == nil && werr != nil {
		err = &net.OpError{Op: "write", Net: "tcp", Err: fmt.Errorf("write: %w", werr)}
	}
	return n, err
}
