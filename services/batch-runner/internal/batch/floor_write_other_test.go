//go:build !unix

package batch

import "syscall"

// floorRawWrite writes nothing on this platform, where the burst makes no raw writes either:
// the floor writes each miner's frames with the connection's Write after its loop.
func floorRawWrite(syscall.RawConn, []byte) (int, error) { return 0, nil }
