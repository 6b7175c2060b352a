package buildworker

import (
	"errors"
	"io"
	"os"
	"sync"
)

// workdirs keeps the work directories of finished builds for the next ones. Every build starts in
// an empty directory of its own either way; taking back one its build left empty spares the next
// build a mkdir and this one a removal. A directory that a build left anything in, or whose mode
// it changed, is removed instead. The zero value is ready.
type workdirs struct {
	mu   sync.Mutex
	free []string
}

// maxFreeWorkdirs bounds the directories kept: more than a worker's slots ever need at once.
const maxFreeWorkdirs = 64

// take returns an empty directory private to the caller.
func (d *workdirs) take() (string, error) {
	d.mu.Lock()
	if n := len(d.free); n > 0 {
		dir := d.free[n-1]
		d.free = d.free[:n-1]
		d.mu.Unlock()
		return dir, nil
	}
	d.mu.Unlock()
	return os.MkdirTemp("", "build-")
}

// give takes dir back after its build, keeping it if the build left it empty and private.
func (d *workdirs) give(dir string) {
	if !emptyPrivate(dir) {
		_ = os.RemoveAll(dir)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.free) >= maxFreeWorkdirs {
		_ = os.Remove(dir)
		return
	}
	d.free = append(d.free, dir)
}

// Close removes the directories kept.
func (d *workdirs) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dir := range d.free {
		_ = os.RemoveAll(dir)
	}
	d.free = nil
}

// emptyPrivate says whether dir is a directory with nothing in it and the mode MkdirTemp gave it.
func emptyPrivate(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		return false
	}
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}
