// Package subtensortest fakes a subtensor node for tests: a SCALE encoder of NeuronInfoLite and
// a websocket JSON-RPC server that replays recorded answers to method+params pairs.
package subtensortest

import (
	"encoding/binary"
	"net/netip"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
)

// Neuron is a NeuronInfoLite to encode; the fields miner-sync does not keep get fixed values.
type Neuron struct {
	Hot, Cold hotkey.PublicKey
	UID       uint16
	Netuid    uint16
	IP        netip.Addr // the zero Addr encodes ip 0: serving nothing
	Port      uint16
	Stakes    []uint64 // rao
	Permit    bool
	IPType    byte // overrides the type derived from IP when not zero
	// LastUpdate is the block the neuron's weights last changed; 4,812,345 when zero.
	LastUpdate uint64
}

// Append appends n's SCALE encoding to b.
func (n Neuron) Append(b []byte) []byte {
	b = append(b, n.Hot[:]...)
	b = append(b, n.Cold[:]...)
	b = subtensor.AppendCompact(b, uint64(n.UID))
	b = subtensor.AppendCompact(b, uint64(n.Netuid))
	b = append(b, 1)                              // active
	b = binary.LittleEndian.AppendUint64(b, 1000) // axon block
	b = binary.LittleEndian.AppendUint32(b, 1)    // axon version
	ip, ipType := ipBytes(n.IP)
	if n.IPType != 0 {
		ipType = n.IPType
	}
	b = append(b, ip[:]...)
	b = binary.LittleEndian.AppendUint16(b, n.Port)
	b = append(b, ipType, 4, 0, 0)             // ip_type, protocol, placeholders
	b = append(b, make([]byte, 8+4+16+2+1)...) // prometheus_info
	b = subtensor.AppendCompact(b, uint64(len(n.Stakes)))
	for _, s := range n.Stakes {
		b = append(b, n.Cold[:]...)
		b = subtensor.AppendCompact(b, s)
	}
	b = subtensor.AppendCompact(b, 7)         // rank
	b = subtensor.AppendCompact(b, 123456789) // emission
	for range 5 {                             // incentive, consensus, trust, validator_trust, dividends
		b = subtensor.AppendCompact(b, 65535)
	}
	lastUpdate := n.LastUpdate
	if lastUpdate == 0 {
		lastUpdate = 4_812_345
	}
	b = subtensor.AppendCompact(b, lastUpdate)
	if n.Permit {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return subtensor.AppendCompact(b, 300) // pruning_score
}

// ipBytes is ip as a little-endian u128 and its ip_type.
func ipBytes(ip netip.Addr) ([16]byte, byte) {
	var be [16]byte
	ipType := byte(4)
	switch {
	case !ip.IsValid():
	case ip.Is4():
		a := ip.As4()
		copy(be[12:], a[:])
	default:
		be, ipType = ip.As16(), 6
	}
	var le [16]byte
	for i := range 16 {
		le[i] = be[15-i]
	}
	return le, ipType
}

// EncodeNeurons is the SCALE Vec<NeuronInfoLite> of ns, as get_neurons_lite answers it.
func EncodeNeurons(ns []Neuron) []byte {
	b := subtensor.AppendCompact(nil, uint64(len(ns)))
	for _, n := range ns {
		b = n.Append(b)
	}
	return b
}

// Key is a made-up public key: i in its first bytes, salt in its last.
func Key(i int, salt byte) hotkey.PublicKey {
	var k hotkey.PublicKey
	binary.BigEndian.PutUint32(k[:], uint32(i))
	k[31] = salt
	return k
}
