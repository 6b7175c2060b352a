package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Fingerprint identifies the complete set of migrations (Drover's files, River's, the roles and
// their grants), so a database migrated from a different set can be told apart, e.g. a stale test
// template.
func Fingerprint() string {
	h := sha256.New()
	_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if m, err := rivermigrate.New(riverpgxv5.New(nil), nil); err == nil {
		for _, v := range m.AllVersions() {
			h.Write([]byte(v.Name))
			h.Write([]byte(v.SQLUp))
		}
	}
	fmt.Fprintf(h, "grants %d %v %v", grantsVersion, Units, crossReads)
	return hex.EncodeToString(h.Sum(nil))[:12]
}
