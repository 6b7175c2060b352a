//go:build unix

package batch

import (
	"errors"
	"net"
	"syscall"
	"unsafe"
)

// floorWrite writes p to c as the burst does: one write(2) made as a raw system call (the
// runtime is not told, so it cannot hand the loop's processor to other work during the call),
// on the non-blocking socket. What the socket buffer does not take is written by c.Write after.
// The floor's loop is then the bare loop of system calls, and no slower than the burst's for the
// runtime's sake.
func floorWrite(c net.Conn, p []byte) {
	n := 0
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Write(func(fd uintptr) bool {
				for {
					r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
					if e == 0 {
						n = int(r)
					}
					if !errors.Is(e, syscall.EINTR) {
						return true
					}
				}
			})
		}
	}
	if n < len(p) {
		_, _ = c.Write(p[n:])
	}
}
