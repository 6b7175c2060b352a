// Package direct is scorer's signer of set_weights against a subtensor node, for a validator
// without Pylon: it reads the finalized head, the subnet's neurons and its weight
// hyperparameters there, and signs and submits SubtensorModule.set_weights with the validator's
// hotkey. Every answer is bounded in size (the websocket's read limit, the decoders' bounds) and
// in time (each call's context).
package direct

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
	"drover.dev/services/scorer/internal/pylon"
)

// Defaults of a Client.
const (
	// DefaultMaxMessage bounds one answer: the runtime metadata is the largest (about 1 MiB of
	// hex for subtensor's runtime); MaxMetadataBytes of hex fit.
	DefaultMaxMessage = 2*subtensor.MaxMetadataBytes + 1<<10
	// DefaultMaxNeurons bounds the neurons read (a subnet holds at most 4,096 uids).
	DefaultMaxNeurons = 4096
	// EraPeriod is how many blocks a submitted extrinsic stays valid (mortal era).
	EraPeriod = 64
)

// Client signs set_weights for one hotkey on one subnet through one node.
type Client struct {
	URL     string // ws:// or wss://
	Netuid  uint16
	Key     *hotkey.Keypair
	Timeout time.Duration // each read, and the submission

	mu   sync.Mutex
	meta *runtime // the latest runtime's metadata, kept while its spec version lasts
}

type runtime struct {
	version subtensor.RuntimeVersion
	genesis [32]byte
	meta    *subtensor.Metadata
}

// Session is one attempt: a connection and the subnet as read at the finalized head.
type Session struct {
	c    *Client
	conn *subtensor.Conn
	rt   *runtime
	head subtensor.Head
	// Neurons maps the registered hotkeys to uids, and gives each one's last_update.
	Neurons pylon.Neurons
	Params  subtensor.WeightsParams
}

// Open connects and reads the finalized head, the runtime there, the subnet's neurons and its
// weight hyperparameters. The caller closes the session.
func (c *Client) Open(ctx context.Context) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	conn, err := subtensor.Dial(ctx, c.URL, DefaultMaxMessage)
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, conn: conn}
	if err := s.read(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) read(ctx context.Context) error {
	var err error
	if s.head, err = s.conn.FinalizedHead(ctx); err != nil {
		return err
	}
	if s.rt, err = s.c.runtime(ctx, s.conn, s.head.Hash); err != nil {
		return err
	}
	neurons, err := s.conn.NeuronsLite(ctx, s.c.Netuid, s.head.Hash, DefaultMaxNeurons)
	if err != nil {
		return err
	}
	s.Neurons = pylon.Neurons{
		Block: s.head.Number, Hash: s.head.Hash,
		UIDs: make(map[string]int, len(neurons)), LastUpdate: make(map[string]int64, len(neurons)),
	}
	for _, n := range neurons {
		s.Neurons.UIDs[n.Hotkey] = int(n.UID)
		s.Neurons.LastUpdate[n.Hotkey] = int64(min(n.LastUpdate, 1<<62))
	}
	s.Params, err = s.conn.SubnetWeightsParams(ctx, s.rt.meta, s.c.Netuid, s.head.Hash)
	return err
}

// runtime returns the metadata of the runtime at hash, read again only when its spec version
// changes.
func (c *Client) runtime(ctx context.Context, conn *subtensor.Conn, hash string) (*runtime, error) {
	v, err := conn.RuntimeVersion(ctx, hash)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	rt := c.meta
	c.mu.Unlock()
	if rt != nil && rt.version == v {
		return rt, nil
	}
	genesis, err := conn.BlockHash(ctx, 0)
	if err != nil {
		return nil, err
	}
	meta, err := conn.Metadata(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("runtime %d: %w", v.SpecVersion, err)
	}
	rt = &runtime{version: v, genesis: genesis, meta: meta}
	c.mu.Lock()
	c.meta = rt
	c.mu.Unlock()
	return rt, nil
}

// Close closes the connection.
func (s *Session) Close() { s.conn.Close() }

// Submitted is a set_weights extrinsic submitted to the node.
type Submitted struct {
	Hash       string // the node's hash of it
	Extrinsic  string // 0x-hex
	UIDs       []uint16
	Weights    []uint16 // scaled so the largest is 65535
	VersionKey uint64
	Nonce      uint32
}

// SetWeights signs set_weights(netuid, uids, weights scaled to u16, the subnet's version key)
// with a mortal era starting at the session's head, and submits it. A runtime the signer does
// not know (a signed extension, the call's layout) is refused before anything is signed. The
// extrinsic is returned with an error when the node refused it.
func (s *Session) SetWeights(ctx context.Context, weights []subtensor.UIDWeight) (Submitted, error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.Timeout)
	defer cancel()
	var out Submitted
	var err error
	if out.UIDs, out.Weights, err = subtensor.NormalizeWeights(weights); err != nil {
		return out, err
	}
	if len(out.UIDs) == 0 {
		return out, fmt.Errorf("no weight above zero")
	}
	out.VersionKey = s.Params.VersionKey
	meta := s.rt.meta
	call, err := meta.SetWeightsCall(s.c.Netuid, out.UIDs, out.Weights, out.VersionKey)
	if err != nil {
		return out, err
	}
	if err := meta.CheckSigner(); err != nil {
		return out, err
	}
	if out.Nonce, err = s.conn.AccountNextIndex(ctx, s.c.Key.Address()); err != nil {
		return out, err
	}
	eraHash, err := hex.DecodeString(s.head.Hash[2:])
	if err != nil || len(eraHash) != 32 {
		return out, fmt.Errorf("head hash %s", s.head.Hash)
	}
	ext, err := meta.SignedExtrinsic(call, s.c.Key, subtensor.TxParams{
		SpecVersion: s.rt.version.SpecVersion, TxVersion: s.rt.version.TransactionVersion, Genesis: s.rt.genesis,
		EraBlock: uint64(s.head.Number), EraHash: [32]byte(eraHash), EraPeriod: EraPeriod, Nonce: out.Nonce,
	})
	if err != nil {
		return out, err
	}
	out.Extrinsic = "0x" + hex.EncodeToString(ext)
	out.Hash = subtensor.ExtrinsicHash(ext)
	hash, err := s.conn.SubmitExtrinsic(ctx, ext)
	if err != nil {
		return out, fmt.Errorf("the node refused set_weights: %w", err)
	}
	if hash != out.Hash {
		return out, fmt.Errorf("the node answered hash %s for the extrinsic whose hash is %s", hash, out.Hash)
	}
	return out, nil
}
