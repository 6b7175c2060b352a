package metagraph

import (
	"context"
	"fmt"
	"time"

	"drover.dev/computehorde/subtensor"
)

// raoPerToken converts a stake in rao to whole tokens.
const raoPerToken = 1e9

// SubtensorSource reads the metagraph from a subtensor node over its websocket JSON-RPC: the
// finalized head (chain_getFinalizedHead, chain_getHeader), then state_call
// NeuronInfoRuntimeApi_get_neurons_lite for Netuid at that block, SCALE-decoded.
type SubtensorSource struct {
	URL        string // ws:// or wss:// of the node, without the subtensor+ prefix
	Netuid     int
	Timeout    time.Duration // the whole fetch: dial and the three calls
	MaxBytes   int64         // largest answer; the hex of the neurons takes twice their bytes
	MaxEntries int
}

// Fetch reads the neurons at the finalized head. A neuron's stake is the sum of its
// NeuronInfoLite.stake entries, in whole alpha tokens of the subnet (rao / 1e9).
func (s *SubtensorSource) Fetch(ctx context.Context) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	conn, err := subtensor.Dial(ctx, s.URL, 2*s.MaxBytes+4096)
	if err != nil {
		return Snapshot{}, err
	}
	defer conn.Close()
	head, err := conn.FinalizedHead(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	neurons, err := conn.NeuronsLite(ctx, uint16(s.Netuid), head.Hash, s.MaxEntries)
	if err != nil {
		return Snapshot{}, fmt.Errorf("neurons at block %d: %w", head.Number, err)
	}
	snap := Snapshot{Netuid: s.Netuid, Block: head.Number, BlockHash: head.Hash, Entries: make([]Entry, len(neurons))}
	for i, n := range neurons {
		snap.Entries[i] = Entry{
			UID: int64(n.UID), Hotkey: n.Hotkey, Coldkey: n.Coldkey, IP: n.IP.String(), Port: int64(n.Port),
			Stake: float64(n.StakeRao) / raoPerToken, Validator: n.ValidatorPermit,
		}
	}
	return snap, nil
}

// String names the node and the subnet.
func (s *SubtensorSource) String() string {
	return fmt.Sprintf("subtensor+%s netuid %d", redactURL(s.URL), s.Netuid)
}
