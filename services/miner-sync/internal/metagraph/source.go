package metagraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned when a source's answer exceeds its byte or entry bound.
var ErrTooLarge = errors.New("metagraph too large")

// Source is where the metagraph comes from: HTTPSource, FileSource, PylonSource or
// SubtensorSource.
type Source interface {
	// Fetch returns the current snapshot. Entries are not validated yet (see Check); an error
	// means the whole snapshot is unusable and the last good list must stay.
	Fetch(ctx context.Context) (Snapshot, error)

	// String describes the source for events and logs; it never holds a secret.
	String() string
}

// Snapshot is the metagraph as a source returned it.
type Snapshot struct {
	Netuid    int
	Block     int64
	BlockHash string // 0x-prefixed lowercase hex; empty when the source does not name it
	Entries   []Entry
}

// Entry is one neuron as the source gave it. DecodeErr is set for an entry that did not decode,
// so that a bad entry is reported rather than aborting the sync.
type Entry struct {
	UID       int64   `json:"uid"`
	Hotkey    string  `json:"hotkey"`
	Coldkey   string  `json:"coldkey"`
	IP        string  `json:"ip"`
	Port      int64   `json:"port"`
	Stake     float64 `json:"stake"`
	Validator bool    `json:"validator"`

	DecodeErr error `json:"-"`
}

type document struct {
	Netuid *int              `json:"netuid"`
	Block  *int64            `json:"block"`
	Miners []json.RawMessage `json:"miners"`
}

// Decode reads a snapshot from r, reading at most maxBytes and accepting at most maxEntries. An
// entry that does not decode is kept with DecodeErr set; only a malformed document fails.
func Decode(r io.Reader, maxBytes int64, maxEntries int) (Snapshot, error) {
	body, err := readBounded(r, maxBytes)
	if err != nil {
		return Snapshot{}, err
	}
	var doc document
	if err := json.Unmarshal(body, &doc); err != nil {
		return Snapshot{}, fmt.Errorf("decode metagraph: %w", err)
	}
	if doc.Netuid == nil || doc.Block == nil || doc.Miners == nil {
		return Snapshot{}, errors.New("decode metagraph: netuid, block and miners are required")
	}
	if len(doc.Miners) > maxEntries {
		return Snapshot{}, fmt.Errorf("%w: %d entries, at most %d", ErrTooLarge, len(doc.Miners), maxEntries)
	}
	snap := Snapshot{Netuid: *doc.Netuid, Block: *doc.Block, Entries: make([]Entry, len(doc.Miners))}
	for i, raw := range doc.Miners {
		if err := json.Unmarshal(raw, &snap.Entries[i]); err != nil {
			snap.Entries[i] = Entry{UID: -1, DecodeErr: err}
		}
	}
	return snap, nil
}

// readBounded reads all of r, failing with ErrTooLarge past maxBytes.
func readBounded(r io.Reader, maxBytes int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read metagraph: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
	}
	return body, nil
}
