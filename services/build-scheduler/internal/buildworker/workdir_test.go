package buildworker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkdirsReuseOnlyEmptyPrivateDirectories checks that a build's directory serves the next
// build only when the build left it as it found it; otherwise it is removed with its contents.
func TestWorkdirsReuseOnlyEmptyPrivateDirectories(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		leave  func(t *testing.T, dir string)
		reused bool
	}{
		"Empty": {leave: func(*testing.T, string) {}, reused: true},
		"AFile": {leave: func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "out"), nil, 0o600))
		}},
		"ASubdir":  {leave: func(t *testing.T, dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700)) }},
		"OpenMode": {leave: func(t *testing.T, dir string) { require.NoError(t, os.Chmod(dir, 0o755)) }},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var dirs workdirs
			t.Cleanup(dirs.Close)
			dir, err := dirs.take()
			require.NoError(t, err)
			tt.leave(t, dir)
			dirs.give(dir)
			next, err := dirs.take()
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(next) })
			entries, err := os.ReadDir(next)
			require.NoError(t, err)
			require.Empty(t, entries, "a build starts in an empty directory")
			if tt.reused {
				require.Equal(t, dir, next)
				return
			}
			require.NotEqual(t, dir, next)
			_, err = os.Stat(dir)
			require.ErrorIs(t, err, os.ErrNotExist, "the directory a build left something in is removed")
		})
	}
}
