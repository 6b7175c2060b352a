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
	"syscall"
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

// polkadotPackages are the polkadot.js packages polkadotjs_check.cjs needs, pinned: the version
// that produced the committed vectors.
var polkadotPackages = []string{
	"@polkadot/types@16.5.6", "@polkadot/util-crypto@14.0.3", "@polkadot/keyring@14.0.3", "@polkadot/util@14.0.3",
}

// RunPolkadotJS runs polkadotjs_check.cjs on in with Node and returns what polkadot.js made of it.
// The packages are looked for in POLKADOTJS_NODE_MODULES, else in the repository's
// .data/polkadot/node_modules, which it fills when they are missing with
//
//	npm install --prefix .data/polkadot @polkadot/types@16.5.6 @polkadot/util-crypto@14.0.3 @polkadot/keyring@14.0.3 @polkadot/util@14.0.3
//
// (one install at a time across test processes, under a file lock). Without Node or npm, or when
// the install fails, it skips t, except under CI=true, where it fails: there .ci/run installs Node
// and npm, and this check is the independent implementation's word on what we sign. Node gets a
// minute.
func RunPolkadotJS(t *testing.T, in PolkadotInput) PolkadotVector {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "no node on PATH: polkadot.js cannot run (the committed vectors are checked without it)")
	}
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Dir(self)
	modules := os.Getenv("POLKADOTJS_NODE_MODULES")
	if modules == "" {
		modules = installPolkadotJS(t, filepath.Join(dir, "..", "..", "..", ".data", "polkadot"))
	}
	if _, err := os.Stat(filepath.Join(modules, "@polkadot", "types")); err != nil {
		skipOrFail(t, fmt.Sprintf("no polkadot.js packages under %s (see RunPolkadotJS)", modules))
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

// installPolkadotJS makes sure the pinned packages are under prefix/node_modules and returns that
// folder. Test processes of several packages may get here at once: a lock file serialises them.
func installPolkadotJS(t *testing.T, prefix string) string {
	t.Helper()
	modules := filepath.Join(prefix, "node_modules")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(prefix, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file releases it too
	var pkg struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(modules, "@polkadot", "types", "package.json")); err == nil {
		_ = json.Unmarshal(b, &pkg)
	}
	if "@polkadot/types@"+pkg.Version == polkadotPackages[0] {
		return modules
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skipOrFail(t, "no npm on PATH: the polkadot.js packages cannot be installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"install", "--prefix", prefix, "--no-save", "--no-package-lock", "--no-audit", "--no-fund"}, polkadotPackages...)
	if out, err := exec.CommandContext(ctx, npm, args...).CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("npm install of polkadot.js: %v\n%s", err, out))
	}
	return modules
}

// skipOrFail skips t, or fails it under CI=true, where every tool this check needs is installed.
func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
