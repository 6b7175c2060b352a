package synthetic

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSingleFileZip(t *testing.T) {
	t.Parallel()

	modified := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	contents := []byte("\x80\x02}(u. binary \x00\xff")
	encoded, err := singleFileZip("payload.txt", contents, modified)
	require.NoError(t, err)

	t.Run("go reads back one stored file", func(t *testing.T) {
		t.Parallel()
		raw, err := base64.StdEncoding.DecodeString(encoded)
		require.NoError(t, err)
		r, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
		require.NoError(t, err)
		require.Len(t, r.File, 1)
		require.Equal(t, "payload.txt", r.File[0].Name)
		require.Equal(t, zip.Store, r.File[0].Method)
		require.True(t, modified.Equal(r.File[0].Modified))
		f, err := r.File[0].Open()
		require.NoError(t, err)
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Equal(t, contents, got)
	})

	t.Run("python reads back one file", func(t *testing.T) {
		t.Parallel()
		lookPython(t)
		const script = `
import base64, io, sys, zipfile
z = zipfile.ZipFile(io.BytesIO(base64.b64decode(sys.stdin.read(), validate=True)))
assert z.testzip() is None
print(z.namelist(), z.read("payload.txt").hex())
`
		out := runPython(t, script, []byte(encoded))
		require.Equal(t, "['payload.txt'] 80027d28752e2062696e61727920"+"00ff\n", out)
	})
}
