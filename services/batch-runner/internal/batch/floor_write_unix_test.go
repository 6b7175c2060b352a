//go:build unix

package batch

import (
	"syscall"
	"unsafe"
)

// floorRawWrite makes the floor's write as the burst makes its own: one write(2) on the
// non-blocking socket as a raw system call (the runtime is not told, so it cannot hand the
// loop's processor to other work during the call). It returns how much the socket buffer took;
// a full buffer is not an error.
func floorRawWrite(rc syscall.RawConn, p []byte) (n int, err error) {
	if len(p) == 0 {
		return 0, nil
	}
	cerr := rc.Write(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case 0:
				n = int(r)
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
			default:
				err = e
			}
			return true
		}
	})
	if err == nil {
		err = cerr
	}
	return n, err
}
