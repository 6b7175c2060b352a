package subtensor

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// StorageKey is the key of pallet's map entry name at the SCALE-encoded key, hashed the way the
// metadata says, with the shapes the caller expects of the key and the value checked.
func (m *Metadata) StorageKey(palletName, name string, key []byte, keyShape, valueShape string) ([]byte, StorageEntry, error) {
	e, prefix, err := m.Storage(palletName, name)
	if err != nil {
		return nil, StorageEntry{}, err
	}
	if len(e.Hashers) != 1 {
		return nil, StorageEntry{}, fmt.Errorf("runtime metadata: %s.%s is not a map of one key", palletName, name)
	}
	if got := m.Shape(e.Key); got != keyShape {
		return nil, StorageEntry{}, fmt.Errorf("runtime metadata: %s.%s is keyed by %s, not %s", palletName, name, got, keyShape)
	}
	if got := m.Shape(e.Value); got != valueShape {
		return nil, StorageEntry{}, fmt.Errorf("runtime metadata: %s.%s holds %s, not %s", palletName, name, got, valueShape)
	}
	out := append(Twox128([]byte(prefix)), Twox128([]byte(name))...)
	switch h := e.Hashers[0]; h {
	case HasherIdentity:
		out = append(out, key...)
	case HasherTwox64Concat:
		out = binary.LittleEndian.AppendUint64(out, xxh64(key, 0))
		out = append(out, key...)
	case HasherBlake2128Concat:
		out = append(append(out, blake2b128(key)...), key...)
	default:
		return nil, StorageEntry{}, fmt.Errorf("runtime metadata: %s.%s hashes its key with hasher %d, not read here", palletName, name, h)
	}
	return out, e, nil
}

// WeightsParams are a subnet's hyperparameters that govern setting weights.
type WeightsParams struct {
	CommitReveal bool   // CommitRevealWeightsEnabled: set_weights is refused, weights must be committed
	RateLimit    uint64 // WeightsSetRateLimit: blocks between two settings by one validator
	VersionKey   uint64 // WeightsVersionKey: the least version_key set_weights accepts
}

// SubnetWeightsParams reads netuid's weight-setting hyperparameters from SubtensorModule's storage
// at block hash; an absent value is the metadata's default.
func (c *Conn) SubnetWeightsParams(ctx context.Context, m *Metadata, netuid uint16, hash string) (WeightsParams, error) {
	var p WeightsParams
	key := []byte{byte(netuid), byte(netuid >> 8)}
	cr, err := c.storageValue(ctx, m, "CommitRevealWeightsEnabled", key, "bool", hash)
	if err != nil {
		return p, err
	}
	if len(cr) != 1 || cr[0] > 1 {
		return p, fmt.Errorf("CommitRevealWeightsEnabled: %x is not a bool", cr)
	}
	p.CommitReveal = cr[0] == 1
	for name, dst := range map[string]*uint64{"WeightsSetRateLimit": &p.RateLimit, "WeightsVersionKey": &p.VersionKey} {
		v, err := c.storageValue(ctx, m, name, key, "u64", hash)
		if err != nil {
			return p, err
		}
		if len(v) != 8 {
			return p, fmt.Errorf("%s: %x is not a u64", name, v)
		}
		*dst = binary.LittleEndian.Uint64(v)
	}
	return p, nil
}

// storageValue reads SubtensorModule's map name at key, or its default when absent.
func (c *Conn) storageValue(ctx context.Context, m *Metadata, name string, key []byte, shape, hash string) ([]byte, error) {
	k, e, err := m.StorageKey(SubtensorPallet, name, key, "u16", shape)
	if err != nil {
		return nil, err
	}
	raw, err := c.Call(ctx, "state_getStorage", "0x"+hex.EncodeToString(k), hash)
	if err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return e.Default, nil
	}
	v, err := hexResult(raw, 1<<10)
	if err != nil {
		return nil, fmt.Errorf("state_getStorage %s: %w", name, err)
	}
	return v, nil
}

// hexResult decodes a JSON "0x…" string of at most limit bytes.
func hexResult(raw json.RawMessage, limit int) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || !strings.HasPrefix(s, "0x") {
		return nil, fmt.Errorf("the answer %.40s… is not a 0x-hex string", raw)
	}
	if len(s)-2 > 2*limit {
		return nil, fmt.Errorf("the answer is %d bytes, at most %d expected", (len(s)-2)/2, limit)
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return nil, fmt.Errorf("the answer: %w", err)
	}
	return b, nil
}
