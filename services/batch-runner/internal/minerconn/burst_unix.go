//go:build unix

package minerconn

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"unsafe"

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

// tryWrite makes one non-blocking write of p to the socket (WriteRaw).
func (c *Conn) tryWrite(p []byte) (int, error) { return WriteRaw(c.raw, p) }

// WriteRaw makes the burst's write: one non-blocking write of p to rc's socket as a raw system
// call (rawWrite), and returns how much of it the socket buffer took; a full buffer is not an
// error. The hot-phase benchmark's floor writes with it too.
func WriteRaw(rc syscall.RawConn, p []byte) (int, error) {
	var n int
	var werr error
	err := rc.Write(func(fd uintptr) bool {
		for {
			n, werr = rawWrite(int(fd), p)
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

// rawWrite is write(2) without telling the scheduler a system call is under way (RawSyscall):
// on a non-blocking socket it never blocks, and the burst's goroutine keeps its processor, which
// the runtime would otherwise hand to other work during a write it thinks long.
func rawWrite(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
