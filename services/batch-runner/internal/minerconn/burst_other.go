//go:build !unix

package minerconn

import (
	"errors"
	"net"
	"syscall"

	"drover.dev/computehorde/recvstamp"
)

// rawConn: bursts write through each connection's writer on this platform.
func rawConn(net.Conn, *recvstamp.Conn) syscall.RawConn { return nil }

func (c *Conn) tryWrite([]byte) (int, error) { return 0, errors.ErrUnsupported }

// WriteRaw: no raw writes on this platform.
func WriteRaw(syscall.RawConn, []byte) (int, error) { return 0, errors.ErrUnsupported }
