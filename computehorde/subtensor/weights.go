package subtensor

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// SubtensorPallet is the pallet that holds subnets, neurons and weights.
const SubtensorPallet = "SubtensorModule"

// setWeightsArgs is the layout of SubtensorModule.set_weights this signer encodes.
var setWeightsArgs = []CallArg{{"netuid", "u16"}, {"dests", "vec<u16>"}, {"weights", "vec<u16>"}, {"version_key", "u64"}}

// UIDWeight is one weight by uid, as a share (any non-negative scale).
type UIDWeight struct {
	UID    uint16
	Weight float64
}

// NormalizeWeights scales weights so the largest is 65535 and rounds them, dropping zeros, as
// bittensor's convert_weights_and_uids_for_emit does (the chain normalises again); the result is
// ordered by uid. A negative, NaN or infinite weight, or a uid given twice, is an error.
func NormalizeWeights(in []UIDWeight) (uids, weights []uint16, err error) {
	largest := 0.0
	seen := make(map[uint16]bool, len(in))
	for _, w := range in {
		if math.IsNaN(w.Weight) || math.IsInf(w.Weight, 0) || w.Weight < 0 {
			return nil, nil, fmt.Errorf("weight of uid %d is %v", w.UID, w.Weight)
		}
		if seen[w.UID] {
			return nil, nil, fmt.Errorf("uid %d weighted twice", w.UID)
		}
		seen[w.UID] = true
		largest = max(largest, w.Weight)
	}
	sorted := slices.SortedFunc(slices.Values(in), func(a, b UIDWeight) int { return cmp.Compare(a.UID, b.UID) })
	for _, w := range sorted {
		if largest == 0 {
			break
		}
		v := math.Round(w.Weight / largest * math.MaxUint16)
		if v == 0 {
			continue
		}
		uids = append(uids, w.UID)
		weights = append(weights, uint16(v))
	}
	return uids, weights, nil
}

// SetWeightsCall encodes SubtensorModule.set_weights(netuid, dests, weights, version_key) with the
// pallet and call indices the runtime metadata gives; a runtime whose set_weights has another
// layout is refused.
func (m *Metadata) SetWeightsCall(netuid uint16, uids, weights []uint16, versionKey uint64) ([]byte, error) {
	if len(uids) != len(weights) {
		return nil, fmt.Errorf("set_weights: %d uids and %d weights", len(uids), len(weights))
	}
	c, err := m.Call(SubtensorPallet, "set_weights")
	if err != nil {
		return nil, err
	}
	if !slices.Equal(c.Args, setWeightsArgs) {
		return nil, fmt.Errorf("runtime metadata: set_weights takes %s; this signer encodes %s", formatArgs(c.Args), formatArgs(setWeightsArgs))
	}
	e := &encoder{}
	e.u8(c.PalletIndex)
	e.u8(c.Index)
	e.u16(netuid)
	e.compact(uint64(len(uids)))
	for _, u := range uids {
		e.u16(u)
	}
	e.compact(uint64(len(weights)))
	for _, w := range weights {
		e.u16(w)
	}
	e.u64(versionKey)
	return e.b, nil
}

func formatArgs(args []CallArg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.Name + ": " + a.Shape
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
