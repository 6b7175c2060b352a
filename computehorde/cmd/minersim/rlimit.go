package main

import (
	"fmt"
	"syscall"
)

// raiseFileLimit lifts the soft open-file limit to the hard limit: every miner holds a
// listener and every validator connection a socket, so thousands of miners exceed the usual
// soft limit of 1024 long before they exceed the hard one.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("get open file limit: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, fmt.Errorf("raise open file limit to %d: %w", lim.Max, err)
		}
	}
	return lim.Cur, nil
}
