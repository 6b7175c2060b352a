package subtensor

import (
	"fmt"
	"math"
	"net/netip"

	"drover.dev/computehorde/hotkey"
)

// Neuron is what miner-sync keeps of a NeuronInfoLite.
type Neuron struct {
	Hotkey, Coldkey string // SS58, format 42
	UID, Netuid     uint16
	Active          bool
	IP              netip.Addr // the axon's; 0.0.0.0 when it serves nothing
	Port            uint16
	// StakeRao is the sum of NeuronInfoLite.stake, in rao (1e-9) of the subnet's alpha token.
	StakeRao        uint64
	LastUpdate      uint64
	ValidatorPermit bool
}

// neuronMinSize is the fewest bytes a NeuronInfoLite takes: two accounts, the axon and
// prometheus infos, and one byte for every compact, bool and empty Vec.
const neuronMinSize = 32 + 32 + 2 + 1 + 34 + 31 + 1 + 8 + 1 + 1

// maxStakeEntries bounds the (coldkey, stake) pairs of one neuron.
const maxStakeEntries = 4096

// DecodeNeuronsLite decodes the SCALE Vec<NeuronInfoLite> that the runtime API
// NeuronInfoRuntimeApi_get_neurons_lite returns, accepting at most maxEntries neurons. Layout
// (subtensor's rpc_info/neuron_info.rs): hotkey, coldkey, uid Compact<u16>, netuid Compact<u16>,
// active bool, axon_info {block u64, version u32, ip u128, port u16, ip_type u8, protocol u8,
// placeholder1 u8, placeholder2 u8}, prometheus_info {block u64, version u32, ip u128, port u16,
// ip_type u8}, stake Vec<(AccountId32, Compact<u64>)>, rank Compact<u16>, emission Compact<u64>,
// incentive, consensus, trust, validator_trust, dividends Compact<u16>, last_update Compact<u64>,
// validator_permit bool, pruning_score Compact<u16>.
func DecodeNeuronsLite(b []byte, maxEntries int) ([]Neuron, error) {
	d := &decoder{b: b}
	n := d.length(maxEntries, neuronMinSize, "neurons")
	out := make([]Neuron, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		if neuron := d.neuron(); d.err == nil {
			out = append(out, neuron)
		}
	}
	if d.err == nil && d.off != len(b) {
		d.fail(fmt.Errorf("scale: %d bytes after the last neuron", len(b)-d.off))
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode neurons (%d of %d whole): %w", len(out), n, d.err)
	}
	return out, nil
}

func (d *decoder) neuron() Neuron {
	hot, cold := d.account(), d.account()
	n := Neuron{
		Hotkey: hotkey.PublicKey(hot).Address(), Coldkey: hotkey.PublicKey(cold).Address(),
		UID: uint16(d.compactMax(math.MaxUint16, "uid")), Netuid: uint16(d.compactMax(math.MaxUint16, "netuid")),
		Active: d.bool(),
	}
	n.IP, n.Port = d.axon()
	d.take(8 + 4 + 16 + 2 + 1) // prometheus_info
	n.StakeRao = d.stake()
	d.compactMax(math.MaxUint16, "rank")
	d.compact() // emission
	for _, what := range []string{"incentive", "consensus", "trust", "validator_trust", "dividends"} {
		d.compactMax(math.MaxUint16, what)
	}
	n.LastUpdate = d.compact()
	n.ValidatorPermit = d.bool()
	d.compactMax(math.MaxUint16, "pruning_score")
	return n
}

// axon reads axon_info: an IPv4 address is in the low 32 bits of ip (ip_type 4), an IPv6 one
// fills it (ip_type 6); ip 0 is a neuron that serves nothing.
func (d *decoder) axon() (netip.Addr, uint16) {
	d.u64() // block
	d.u32() // version
	ip := d.u128()
	port := d.u16()
	ipType := d.u8()
	d.take(3) // protocol, placeholder1, placeholder2
	switch {
	case ip == [16]byte{}:
		return netip.IPv4Unspecified(), port
	case ipType == 4:
		return netip.AddrFrom4([4]byte(ip[12:])), port
	case ipType == 6:
		return netip.AddrFrom16(ip), port
	}
	if d.err == nil {
		d.fail(fmt.Errorf("axon ip_type %d: want 4 or 6", ipType))
	}
	return netip.Addr{}, 0
}

// stake sums the neuron's (coldkey, stake) pairs, saturating rather than overflowing.
func (d *decoder) stake() uint64 {
	n := d.length(maxStakeEntries, 33, "stake")
	var sum uint64
	for range n {
		d.take(32)
		v := d.compact()
		if sum > math.MaxUint64-v {
			sum = math.MaxUint64
			continue
		}
		sum += v
	}
	return sum
}
