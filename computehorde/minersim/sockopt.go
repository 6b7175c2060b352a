package minersim

import (
	"syscall"
)

// smallReceiveBuffer shrinks a listening socket's receive buffer, which accepted connections
// inherit before the handshake fixes their window: a miner that stops reading then makes the
// validator's writes block after kilobytes instead of megabytes.
func smallReceiveBuffer(_, _ string, rc syscall.RawConn) error {
	var sockErr error
	err := rc.Control(func(fd uintptr) {
		sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
	if err != nil {
		return err
	}
	return sockErr
}
