package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"

	"drover.dev/computehorde/internal/jsonwire"
)

// Manifest is a miner's executor count per class, in the order the miner listed them. Upstream
// takes the first manifest of a connection and counts only classes with a positive count;
// that policy is the caller's, the type keeps what was sent.
type Manifest []ManifestEntry

// ManifestEntry is one class of a Manifest.
type ManifestEntry struct {
	Class string
	Count int
}

// Counts returns the positive counts by class.
func (m Manifest) Counts() map[string]int {
	counts := make(map[string]int, len(m))
	for _, e := range m {
		if e.Count > 0 {
			counts[e.Class] = e.Count
		}
	}
	return counts
}

// MarshalJSON writes {"class": count, ...} in entry order.
func (m Manifest) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, e := range m {
		if i > 0 {
			buf = append(buf, ',')
		}
		key, err := jsonwire.Marshal(e.Class)
		if err != nil {
			return nil, err
		}
		buf = append(buf, key...)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, int64(e.Count), 10)
	}
	return append(buf, '}'), nil
}

// UnmarshalJSON reads the object keeping key order. A repeated class keeps its first position
// and its last count, as a Python dict does.
func (m *Manifest) UnmarshalJSON(data []byte) error {
	if jsonKind(data) != "object" {
		return &json.UnmarshalTypeError{Value: jsonKind(data), Type: reflect.TypeFor[Manifest]()}
	}
	var counts map[string]int
	if err := json.Unmarshal(data, &counts); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	_, _ = dec.Token() // the opening brace; json.Unmarshal above proved the object well formed
	entries := make(Manifest, 0, len(counts))
	for dec.More() {
		key, _ := dec.Token()
		var skip json.RawMessage
		_ = dec.Decode(&skip)
		class := key.(string)
		if count, ok := counts[class]; ok {
			entries = append(entries, ManifestEntry{Class: class, Count: count})
			delete(counts, class)
		}
	}
	*m = entries
	return nil
}
