package synthetic

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"time"
)

// singleFileZip returns the standard base64 of a zip archive holding one file, stored without
// compression as upstream's zipfile writes it: the payload is mostly random and would barely
// shrink, and storing keeps generation cheap.
func singleFileZip(name string, contents []byte, modified time.Time) (string, error) {
	var buf bytes.Buffer
	buf.Grow(len(contents) + 2*len(name) + 128)
	w := zip.NewWriter(&buf)
	f, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: modified})
	if err != nil {
		return "", fmt.Errorf("zip create %s: %w", name, err)
	}
	if _, err := f.Write(contents); err != nil {
		return "", fmt.Errorf("zip write %s: %w", name, err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("zip close: %w", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
