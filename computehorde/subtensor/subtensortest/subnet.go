package subtensortest

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"drover.dev/computehorde/subtensor"
)

// Subnet is a subnet as a set_weights signer reads it from a Node: the finalized head and its
// neurons, the runtime (version, genesis hash, metadata), the weight hyperparameters in storage
// and the signer's nonce; submitted extrinsics are kept, and answered with their hash. Set the
// fields, then record them at a block with At.
type Subnet struct {
	Node         *Node
	Netuid       uint16
	Neurons      []Neuron
	Spec         MetadataSpec
	Genesis      string
	CommitReveal bool
	RateLimit    uint64
	VersionKey   *uint64 // nil: absent from storage (the metadata's default)
	Signer       string  // SS58 whose nonce is Nonce
	Nonce        uint32

	mu        sync.Mutex
	refuse    string
	submitted [][]byte
}

// NewSubnet serves netuid on node, with spec 343's runtime and a rate limit of 100 blocks;
// author_submitExtrinsic answers each extrinsic's hash.
func NewSubnet(node *Node, netuid uint16) *Subnet {
	s := &Subnet{
		Node: node, Netuid: netuid, Spec: DefaultMetadataSpec(), RateLimit: 100,
		Genesis: "0x2f0555cc76fc2840a25a6ea3b9637146806f1f44b090c175ffde2a7e5ab36c03",
	}
	node.Handle("author_submitExtrinsic", func(params []any) (any, error) {
		if len(params) != 1 {
			return nil, fmt.Errorf("invalid params: %d, want 1", len(params))
		}
		hexExt, _ := params[0].(string)
		b, err := hex.DecodeString(strings.TrimPrefix(hexExt, "0x"))
		if err != nil {
			return nil, fmt.Errorf("invalid params: %w", err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.refuse != "" {
			return nil, &RPCError{Code: 1010, Message: "Invalid Transaction", Data: s.refuse}
		}
		s.submitted = append(s.submitted, b)
		return subtensor.ExtrinsicHash(b), nil
	})
	return s
}

// HashOf is the made-up hash of block number n.
func HashOf(n int64) string { return fmt.Sprintf("0x%064x", n) }

// At records the subnet with its finalized head at block (hash HashOf(block)).
func (s *Subnet) At(t testing.TB, block int64) {
	t.Helper()
	hash := HashOf(block)
	s.Node.RecordChain(block, hash, s.Netuid, EncodeNeurons(s.Neurons))
	meta := Metadata(s.Spec)
	s.Node.Record("state_getRuntimeVersion", []any{hash}, map[string]any{"specName": "node-subtensor", "specVersion": 343, "transactionVersion": 1})
	s.Node.Record("chain_getBlockHash", []any{0}, s.Genesis)
	s.Node.Record("state_getMetadata", []any{hash}, "0x"+hex.EncodeToString(meta))
	s.Node.Record("system_accountNextIndex", []any{s.Signer}, s.Nonce)
	m, err := subtensor.DecodeMetadata(meta)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte{byte(s.Netuid), byte(s.Netuid >> 8)}
	storage := func(name, shape string, value any) {
		k, _, err := m.StorageKey(subtensor.SubtensorPallet, name, key, "u16", shape)
		if err != nil {
			t.Fatal(err)
		}
		s.Node.Record("state_getStorage", []any{"0x" + hex.EncodeToString(k), hash}, value)
	}
	storage("CommitRevealWeightsEnabled", "bool", map[bool]string{false: "0x00", true: "0x01"}[s.CommitReveal])
	storage("WeightsSetRateLimit", "u64", "0x"+hex.EncodeToString(binary.LittleEndian.AppendUint64(nil, s.RateLimit)))
	var version any // null: absent
	if s.VersionKey != nil {
		version = "0x" + hex.EncodeToString(binary.LittleEndian.AppendUint64(nil, *s.VersionKey))
	}
	storage("WeightsVersionKey", "u64", version)
}

// Refuse makes author_submitExtrinsic answer "Invalid Transaction" (code 1010) with data msg, as
// a node refuses a transaction ("" accepts again).
func (s *Subnet) Refuse(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = msg
}

// Submitted returns the extrinsics submitted so far.
func (s *Subnet) Submitted() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.submitted...)
}
