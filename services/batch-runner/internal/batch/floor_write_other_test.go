//go:build !unix

package batch

import "net"

// floorWrite writes p to c: the burst makes no raw writes on this platform either.
func floorWrite(c net.Conn, p []byte) { _, _ = c.Write(p) }
