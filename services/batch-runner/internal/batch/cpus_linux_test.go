//go:build linux

package batch

import (
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinSelf restricts every thread of this process to cpus, and so every thread started later
// (a thread inherits its creator's mask), and sets GOMAXPROCS to their number. Threads are
// listed again until a pass finds none new, in case the runtime started one meanwhile.
func pinSelf(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				return err
			}
			done[tid], fresh = true, fresh+1
		}
		if fresh == 0 {
			runtime.GOMAXPROCS(len(cpus))
			return nil
		}
	}
}
