//go:build !linux

package recvstamp

import (
	"net"
	"time"
)

// kernelStamped returns nil: only Linux's TCP hands a receive timestamp to the reader here, so
// elsewhere every read is stamped with the instant it returned.
func kernelStamped(net.Conn) func([]byte) (int, time.Time, bool, error) { return nil }
