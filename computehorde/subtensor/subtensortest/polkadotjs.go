package subtensortest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// PolkadotInput is a set_weights extrinsic built by the Go encoder with everything it was built
// from, as polkadotjs_check.cjs reads it.
type PolkadotInput struct {
	Metadata    string   `json:"metadata"` // 0x-hex
	URI         string   `json:"uri"`      // the signer's secret URI
	Netuid      uint16   `json:"netuid"`
	UIDs        []uint16 `json:"uids"`
	Weights     []uint16 `json:"weights"`
	VersionKey  uint64   `json:"version_key"`
	SpecVersion uint32   `json:"spec_version"`
	TxVersion   uint32   `json:"tx_version"`
	Genesis     string   `json:"genesis"`
	EraBlock    uint64   `json:"era_block"`
	EraHash     string   `json:"era_hash"`
	EraPeriod   uint64   `json:"era_period"`
	Nonce       uint32   `json:"nonce"`
	Tip         uint64   `json:"tip"`
	Call        string   `json:"call"`
	Extrinsic   string   `json:"extrinsic"`
}

// PolkadotVector is what polkadot.js made of a PolkadotInput: what it decoded, whether the
// signature verified, and its own encodings of the same inputs.
type PolkadotVector struct {
	Generator string        `json:"generator"`
	Input     PolkadotInput `json:"input"`
	Decoded   struct {
		Section            string         `json:"section"`
		Method             string         `json:"method"`
		Args               map[string]any `json:"args"`
		ExtrinsicCallEqual bool           `json:"extrinsic_call_equal"`
		Signed             bool           `json:"signed"`
		Signer             string         `json:"signer"`
		Version            int            `json:"version"`
		Nonce              uint32         `json:"nonce"`
		Tip                string         `json:"tip"`
		SignedExtensions   []string       `json:"signed_extensions"`
		SignatureValid     bool           `json:"signature_valid"`
		Hash               string         `json:"hash"`
	} `json:"decoded"`
	PolkadotJS struct {
		PublicKey              string `json:"public_key"`
		Address                string `json:"address"`
		Call                   string `json:"call"`
		Payload                string `json:"payload"`
		OwnExtrinsic           string `json:"own_extrinsic"`
		OwnPayload             string `json:"own_payload"`
		OwnSignature           string `json:"own_signature"`
		Era                    string `json:"era"`
		StorageKeyCommitReveal string `json:"storage_key_commit_reveal"`
		Twox64Of100Bytes       string `json:"twox64_of_100_bytes"`
		Blake2128OfNetuid      string `json:"blake2_128_of_netuid"`
		Blake2256OfExtrinsic   string `json:"blake2_256_of_extrinsic"`
	} `json:"polkadotjs"`
}

// RunPolkadotJS runs polkadotjs_check.cjs on in with Node and returns what polkadot.js made of it.
// It skips t when Node or the polkadot.js packages are missing: they are looked for in
// POLKADOTJS_NODE_MODULES, else in the repository's .data/polkadot/node_modules, where
//
//	npm install --prefix .data/polkadot @polkadot/types@16.5.6 @polkadot/util-crypto @polkadot/keyring @polkadot/util
//
// puts them. Node gets a minute.
func RunPolkadotJS(t *testing.T, in PolkadotInput) PolkadotVector {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: polkadot.js cannot run (the committed vectors are checked without it)")
	}
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Dir(self)
	modules := os.Getenv("POLKADOTJS_NODE_MODULES")
	if modules == "" {
		modules = filepath.Join(dir, "..", "..", "..", ".data", "polkadot", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(modules, "@polkadot", "types")); err != nil {
		t.Skipf("no polkadot.js packages under %s (see RunPolkadotJS)", modules)
	}
	path := filepath.Join(t.TempDir(), "input.json")
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "polkadotjs_check.cjs"), path)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("polkadot.js: %v\n%s", err, stderr)
	}
	var v PolkadotVector
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(fmt.Errorf("polkadot.js answer: %w", err))
	}
	return v
}
