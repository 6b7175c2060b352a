package subtensor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// RuntimeVersion is the part of state_getRuntimeVersion a signer needs.
type RuntimeVersion struct {
	SpecVersion        uint32 `json:"specVersion"`
	TransactionVersion uint32 `json:"transactionVersion"`
}

// RuntimeVersion reads the runtime version at block hash.
func (c *Conn) RuntimeVersion(ctx context.Context, hash string) (RuntimeVersion, error) {
	raw, err := c.Call(ctx, "state_getRuntimeVersion", hash)
	if err != nil {
		return RuntimeVersion{}, err
	}
	var v struct {
		SpecVersion        *uint32 `json:"specVersion"`
		TransactionVersion *uint32 `json:"transactionVersion"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.SpecVersion == nil || v.TransactionVersion == nil {
		return RuntimeVersion{}, fmt.Errorf("state_getRuntimeVersion: %.80s… has no specVersion and transactionVersion", raw)
	}
	return RuntimeVersion{SpecVersion: *v.SpecVersion, TransactionVersion: *v.TransactionVersion}, nil
}

// Metadata reads and decodes the runtime metadata at block hash.
func (c *Conn) Metadata(ctx context.Context, hash string) (*Metadata, error) {
	raw, err := c.Call(ctx, "state_getMetadata", hash)
	if err != nil {
		return nil, err
	}
	b, err := hexResult(raw, MaxMetadataBytes)
	if err != nil {
		return nil, fmt.Errorf("state_getMetadata: %w", err)
	}
	return DecodeMetadata(b)
}

// BlockHash is the hash of block number (0: the genesis block).
func (c *Conn) BlockHash(ctx context.Context, number uint64) ([32]byte, error) {
	raw, err := c.Call(ctx, "chain_getBlockHash", number)
	if err != nil {
		return [32]byte{}, err
	}
	return hash32(raw, "chain_getBlockHash")
}

// AccountNextIndex is the nonce of address's next transaction, pool included.
func (c *Conn) AccountNextIndex(ctx context.Context, address string) (uint32, error) {
	raw, err := c.Call(ctx, "system_accountNextIndex", address)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(raw), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("system_accountNextIndex: %.40s is not a u32", raw)
	}
	return uint32(n), nil
}

// SubmitExtrinsic submits a signed extrinsic and returns the hash the node gives it; the node
// answers once the extrinsic is in its pool, not on chain.
func (c *Conn) SubmitExtrinsic(ctx context.Context, extrinsic []byte) (string, error) {
	raw, err := c.Call(ctx, "author_submitExtrinsic", "0x"+hex.EncodeToString(extrinsic))
	if err != nil {
		return "", err
	}
	h, err := hash32(raw, "author_submitExtrinsic")
	if err != nil {
		return "", err
	}
	return "0x" + hex.EncodeToString(h[:]), nil
}

func hash32(raw json.RawMessage, method string) ([32]byte, error) {
	var s string
	if json.Unmarshal(raw, &s) != nil || !isHash(s) {
		return [32]byte{}, fmt.Errorf("%s: %.80s is not a 32-byte hash", method, raw)
	}
	b, _ := hex.DecodeString(s[2:])
	return [32]byte(b), nil
}
