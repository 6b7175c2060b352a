package metagraph

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/subtensor/subtensortest"
)

const nodeHash = "0x" + "9f00000000000000000000000000000000000000000000000000000000000042"

// subnet1024 is a full subnet: 1,024 neurons, IPv4 and IPv6 axons, every 16th a validator that
// serves nothing.
func subnet1024() []subtensortest.Neuron {
	ns := make([]subtensortest.Neuron, 1024)
	for i := range ns {
		n := subtensortest.Neuron{
			Hot: subtensortest.Key(i, 1), Cold: subtensortest.Key(i/4, 2), UID: uint16(i), Netuid: 12,
			IP: netip.MustParseAddr(fmt.Sprintf("10.%d.%d.1", i/256, i%256)), Port: uint16(8000 + i%1000),
			Stakes: []uint64{uint64(i) * 1_000_000_000},
		}
		if i%3 == 0 {
			n.IP = netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", i+1))
		}
		if i%16 == 0 {
			n.IP, n.Port, n.Permit = netip.Addr{}, 0, true
		}
		ns[i] = n
	}
	return ns
}

func TestSubtensorSource(t *testing.T) {
	t.Parallel()
	source := func(node *subtensortest.Node) *SubtensorSource {
		return &SubtensorSource{URL: node.URL(), Netuid: 12, Timeout: 2 * time.Second, MaxBytes: 1 << 20, MaxEntries: 4096}
	}

	t.Run("ReplaysAFullSubnet", func(t *testing.T) {
		t.Parallel()
		node := subtensortest.NewNode(t)
		node.RecordChain(4_812_345, nodeHash, 12, subtensortest.EncodeNeurons(subnet1024()))
		snap, err := source(node).Fetch(context.Background())
		require.NoError(t, err)
		require.Equal(t, []string{"chain_getFinalizedHead", "chain_getHeader", "state_call"}, node.Calls())
		require.Equal(t, int64(4_812_345), snap.Block)
		require.Equal(t, nodeHash, snap.BlockHash)
		require.Len(t, snap.Entries, 1024)
		require.Equal(t, Entry{UID: 0, Hotkey: subtensortest.Key(0, 1).Address(), Coldkey: subtensortest.Key(0, 2).Address(),
			IP: "0.0.0.0", Port: 0, Stake: 0, Validator: true}, snap.Entries[0])
		require.Equal(t, Entry{UID: 5, Hotkey: subtensortest.Key(5, 1).Address(), Coldkey: subtensortest.Key(1, 2).Address(),
			IP: "10.0.5.1", Port: 8005, Stake: 5}, snap.Entries[5], "stake in whole tokens: rao / 1e9")
		require.Equal(t, "2001:db8::4", snap.Entries[3].IP)
		miners, skipped := Check(snap.Entries)
		require.Empty(t, skipped)
		require.Len(t, miners, 1024)
	})
	t.Run("NotRecordedIsANodeError", func(t *testing.T) {
		t.Parallel()
		node := subtensortest.NewNode(t)
		node.RecordChain(7, nodeHash, 13, subtensortest.EncodeNeurons(nil)) // another subnet
		_, err := source(node).Fetch(context.Background())
		require.ErrorContains(t, err, "state_call: node error -32601")
	})
	t.Run("MalformedNeurons", func(t *testing.T) {
		t.Parallel()
		node := subtensortest.NewNode(t)
		data := subtensortest.EncodeNeurons(subnet1024()[:3])
		node.RecordChain(7, nodeHash, 12, data[:len(data)-5])
		_, err := source(node).Fetch(context.Background())
		require.ErrorContains(t, err, "neurons at block 7: decode neurons (2 of 3 whole)")
	})
	t.Run("TooLarge", func(t *testing.T) {
		t.Parallel()
		node := subtensortest.NewNode(t)
		node.RecordChain(7, nodeHash, 12, subtensortest.EncodeNeurons(subnet1024()))
		src := source(node)
		src.MaxBytes = 4096
		_, err := src.Fetch(context.Background())
		require.ErrorContains(t, err, "read limit exceeded")
	})
	t.Run("TooSlow", func(t *testing.T) {
		t.Parallel()
		node := subtensortest.NewNode(t)
		node.RecordChain(7, nodeHash, 12, subtensortest.EncodeNeurons(nil))
		node.SetDelay(3 * time.Second)
		src := source(node)
		src.Timeout = 200 * time.Millisecond
		// The node answers after 3 s, and would be read: only the source's own timeout fails
		// the call, and says so.
		_, err := src.Fetch(context.Background())
		require.ErrorContains(t, err, "timeout")
	})
	t.Run("Unreachable", func(t *testing.T) {
		t.Parallel()
		_, err := (&SubtensorSource{URL: "ws://127.0.0.1:1", Timeout: time.Second, MaxBytes: 1024, MaxEntries: 1}).Fetch(context.Background())
		require.ErrorContains(t, err, "dial subtensor node")
	})
}
