package metagraph

import (
	"context"
	"fmt"
	"os"
)

// FileSource reads the metagraph from a JSON file, for a deployment that exports it to disk and
// for replaying a captured metagraph.
type FileSource struct {
	Path       string
	MaxBytes   int64
	MaxEntries int
}

// Fetch reads and decodes the file; one larger than MaxBytes is refused without reading it.
func (s *FileSource) Fetch(context.Context) (Snapshot, error) {
	f, err := os.Open(s.Path)
	if err != nil {
		return Snapshot{}, fmt.Errorf("open metagraph file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > s.MaxBytes {
		return Snapshot{}, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, st.Size(), s.MaxBytes)
	}
	return Decode(f, s.MaxBytes, s.MaxEntries)
}

// String names the file.
func (s *FileSource) String() string { return "file:" + s.Path }
