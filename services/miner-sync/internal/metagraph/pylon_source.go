package metagraph

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// PylonSource reads the metagraph from Pylon, the HTTP service that wraps a subtensor node for
// ComputeHorde's validator: GET {BaseURL}/api/v1/subnet/{Netuid}/block/latest/neurons, with
// Token as a bearer token when set. Its answer names the block (number and hash) it was read at.
type PylonSource struct {
	BaseURL    string // http(s)://host:port of Pylon, without the pylon+ prefix
	Token      string // Pylon's identity token; never printed
	Netuid     int
	Timeout    time.Duration // whole request, body included
	MaxBytes   int64
	MaxEntries int
	Client     *http.Client // a fresh client when nil
}

// Fetch GETs the latest block's neurons within Timeout and decodes at most MaxBytes of them.
func (s *PylonSource) Fetch(ctx context.Context) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	body, err := getBounded(ctx, s.Client, s.neuronsURL(), s.Token, s.MaxBytes)
	if err != nil {
		return Snapshot{}, err
	}
	defer body.Close()
	snap, err := DecodePylon(body, s.MaxBytes, s.MaxEntries)
	snap.Netuid = s.Netuid
	return snap, err
}

func (s *PylonSource) neuronsURL() string {
	return fmt.Sprintf("%s/api/v1/subnet/%d/block/latest/neurons", strings.TrimRight(s.BaseURL, "/"), s.Netuid)
}

// String names Pylon and the subnet, never the token.
func (s *PylonSource) String() string {
	return fmt.Sprintf("pylon+%s netuid %d", redactURL(s.BaseURL), s.Netuid)
}

// pylonDocument is Pylon's neurons answer: the block, and the neurons keyed by hotkey.
type pylonDocument struct {
	Block *struct {
		Number *int64 `json:"number"`
		Hash   string `json:"hash"`
	} `json:"block"`
	Neurons map[string]json.RawMessage `json:"neurons"`
}

// pylonNeuron holds the fields of Pylon's neuron that miner-sync keeps.
type pylonNeuron struct {
	UID      *int64 `json:"uid"`
	Hotkey   string `json:"hotkey"`
	Coldkey  string `json:"coldkey"`
	AxonInfo *struct {
		IP   string `json:"ip"`
		Port int64  `json:"port"`
	} `json:"axon_info"`
	Stake           float64 `json:"stake"`
	ValidatorPermit bool    `json:"validator_permit"`
}

var blockHash = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// DecodePylon reads Pylon's neurons answer from r, reading at most maxBytes and accepting at most
// maxEntries neurons, ordered by uid. A neuron that does not decode is kept with DecodeErr set;
// only a malformed document fails.
func DecodePylon(r io.Reader, maxBytes int64, maxEntries int) (Snapshot, error) {
	body, err := readBounded(r, maxBytes)
	if err != nil {
		return Snapshot{}, err
	}
	var doc pylonDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return Snapshot{}, fmt.Errorf("decode pylon neurons: %w", err)
	}
	if doc.Block == nil || doc.Block.Number == nil || doc.Neurons == nil {
		return Snapshot{}, errors.New("decode pylon neurons: block.number and neurons are required")
	}
	if !blockHash.MatchString(doc.Block.Hash) {
		return Snapshot{}, fmt.Errorf("decode pylon neurons: block.hash %q is not 0x and 64 hex digits", truncate(doc.Block.Hash, 80))
	}
	if len(doc.Neurons) > maxEntries {
		return Snapshot{}, fmt.Errorf("%w: %d entries, at most %d", ErrTooLarge, len(doc.Neurons), maxEntries)
	}
	snap := Snapshot{Block: *doc.Block.Number, BlockHash: strings.ToLower(doc.Block.Hash), Entries: make([]Entry, 0, len(doc.Neurons))}
	for key, raw := range doc.Neurons {
		snap.Entries = append(snap.Entries, pylonEntry(key, raw))
	}
	slices.SortFunc(snap.Entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.UID, b.UID), cmp.Compare(a.Hotkey, b.Hotkey))
	})
	return snap, nil
}

// pylonEntry converts one neuron; key is the hotkey Pylon listed it under.
func pylonEntry(key string, raw json.RawMessage) Entry {
	var n pylonNeuron
	bad := func(err error) Entry { return Entry{UID: -1, Hotkey: truncate(key, 64), DecodeErr: err} }
	switch err := json.Unmarshal(raw, &n); {
	case err != nil:
		return bad(err)
	case n.UID == nil:
		return bad(errors.New("uid is missing"))
	case n.Hotkey != key:
		return bad(fmt.Errorf("listed under %q but its hotkey is %q", truncate(key, 64), truncate(n.Hotkey, 64)))
	case n.AxonInfo == nil:
		return bad(errors.New("axon_info is missing"))
	}
	return Entry{
		UID: *n.UID, Hotkey: n.Hotkey, Coldkey: n.Coldkey, IP: n.AxonInfo.IP, Port: n.AxonInfo.Port,
		Stake: n.Stake, Validator: n.ValidatorPermit,
	}
}
