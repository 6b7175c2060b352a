package subtensor_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
	"drover.dev/computehorde/subtensor/subtensortest"
)

// vectorsFile holds what polkadot.js (an independent implementation, see
// subtensortest/polkadotjs_check.cjs) made of set_weights extrinsics built here: a short one, signed
// as is, and a long one, whose payload is hashed first.
const vectorsFile = "testdata/polkadotjs_vectors.json"

// newVectorInput builds a set_weights extrinsic of n weights signed by //Alice.
func newVectorInput(t *testing.T, n int) subtensortest.PolkadotInput {
	t.Helper()
	meta := subtensortest.Metadata(subtensortest.DefaultMetadataSpec())
	m, err := subtensor.DecodeMetadata(meta)
	require.NoError(t, err)
	in := subtensortest.PolkadotInput{
		Metadata: "0x" + hex.EncodeToString(meta), URI: "//Alice", Netuid: 12, VersionKey: 2,
		SpecVersion: 343, TxVersion: 1, EraBlock: 5_000_123, EraPeriod: 64, Nonce: 17, Tip: 0,
		Genesis: "0x2f0555cc76fc2840a25a6ea3b9637146806f1f44b090c175ffde2a7e5ab36c03",
		EraHash: "0x" + strings.Repeat("ab", 32),
	}
	ws := make([]subtensor.UIDWeight, n)
	for i := range n {
		ws[i] = subtensor.UIDWeight{UID: uint16(3 * i), Weight: float64(i + 1)}
	}
	in.UIDs, in.Weights, err = subtensor.NormalizeWeights(ws)
	require.NoError(t, err)
	call, err := m.SetWeightsCall(in.Netuid, in.UIDs, in.Weights, in.VersionKey)
	require.NoError(t, err)
	key, err := hotkey.FromURI(in.URI)
	require.NoError(t, err)
	ext, err := m.SignedExtrinsic(call, key, txParams(t, in))
	require.NoError(t, err)
	in.Call, in.Extrinsic = "0x"+hex.EncodeToString(call), "0x"+hex.EncodeToString(ext)
	return in
}

func txParams(t *testing.T, in subtensortest.PolkadotInput) subtensor.TxParams {
	t.Helper()
	return subtensor.TxParams{
		SpecVersion: in.SpecVersion, TxVersion: in.TxVersion, Genesis: [32]byte(unhex(t, in.Genesis)),
		EraBlock: in.EraBlock, EraHash: [32]byte(unhex(t, in.EraHash)), EraPeriod: in.EraPeriod, Nonce: in.Nonce, Tip: in.Tip,
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	require.NoError(t, err)
	return b
}

// TestPolkadotJSVectors checks the committed vectors: polkadot.js decoded the metadata, call and
// extrinsic built here as built and verified their signatures; and the Go encoder reproduces
// polkadot.js's own encodings of the same inputs byte for byte, its own signed extrinsic included
// (with its signature spliced in), and verifies its signature.
func TestPolkadotJSVectors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(vectorsFile)
	require.NoError(t, err)
	var vectors []subtensortest.PolkadotVector
	require.NoError(t, json.Unmarshal(raw, &vectors))
	require.Len(t, vectors, 2)
	for _, v := range vectors {
		checkVector(t, v)
	}
}

func checkVector(t *testing.T, v subtensortest.PolkadotVector) {
	t.Helper()
	in := v.Input
	meta := subtensortest.Metadata(subtensortest.DefaultMetadataSpec())
	require.Equal(t, "0x"+hex.EncodeToString(meta), in.Metadata, "the metadata builder changed: regenerate the vectors")
	m, err := subtensor.DecodeMetadata(meta)
	require.NoError(t, err)
	key, err := hotkey.FromURI(in.URI)
	require.NoError(t, err)
	pub := key.PublicKey()

	// What polkadot.js read from the Go-built extrinsic.
	d := v.Decoded
	require.Equal(t, "subtensorModule", d.Section)
	require.Equal(t, "setWeights", d.Method)
	require.Equal(t, float64(in.Netuid), d.Args["netuid"])
	require.Equal(t, float64(in.VersionKey), d.Args["versionKey"], "%v", d.Args)
	require.Len(t, d.Args["dests"], len(in.UIDs))
	require.Len(t, d.Args["weights"], len(in.Weights))
	for i := range in.UIDs {
		require.Equal(t, float64(in.UIDs[i]), d.Args["dests"].([]any)[i])
		require.Equal(t, float64(in.Weights[i]), d.Args["weights"].([]any)[i])
	}
	require.True(t, d.ExtrinsicCallEqual)
	require.True(t, d.Signed)
	require.Equal(t, 0x84, d.Version) // signed, version 4
	require.Equal(t, key.Address(), d.Signer)
	require.Equal(t, in.Nonce, d.Nonce)
	require.Equal(t, subtensortest.SpecExtensions, d.SignedExtensions)
	require.True(t, d.SignatureValid, "polkadot.js did not verify the Go signature")
	require.Equal(t, d.Hash, subtensor.ExtrinsicHash(unhex(t, in.Extrinsic)))

	// polkadot.js's encodings of the same inputs, reproduced here.
	pj := v.PolkadotJS
	require.Equal(t, pub.Hex(), pj.PublicKey)
	require.Equal(t, key.Address(), pj.Address)
	call, err := m.SetWeightsCall(in.Netuid, in.UIDs, in.Weights, in.VersionKey)
	require.NoError(t, err)
	require.Equal(t, pj.Call, "0x"+hex.EncodeToString(call))
	require.Equal(t, in.Call, pj.Call)
	era, err := subtensor.MortalEra(in.EraBlock, in.EraPeriod)
	require.NoError(t, err)
	require.Equal(t, pj.Era, "0x"+hex.EncodeToString(era))
	var signed []byte
	ownSig := unhex(t, pj.OwnSignature)
	own, err := m.BuildSigned(call, pub, txParams(t, in), func(payload []byte) ([]byte, error) {
		signed = payload
		return ownSig, nil
	})
	require.NoError(t, err)
	require.Equal(t, pj.OwnExtrinsic, "0x"+hex.EncodeToString(own), "polkadot.js's signed extrinsic, its signature spliced into the Go one")
	full := unhex(t, pj.OwnPayload)
	require.Equal(t, unhex(t, pj.Payload), full)
	if len(full) > 256 {
		require.Equal(t, subtensor.Blake2b256(full), signed)
	} else {
		require.Equal(t, full, signed)
	}
	require.NoError(t, pub.Verify(signed, pj.OwnSignature), "polkadot.js's signature does not verify here")

	// Hashes and the storage key.
	k, _, err := m.StorageKey("SubtensorModule", "CommitRevealWeightsEnabled", []byte{byte(in.Netuid), byte(in.Netuid >> 8)}, "u16", "bool")
	require.NoError(t, err)
	require.Equal(t, pj.StorageKeyCommitReveal, "0x"+hex.EncodeToString(k))
	require.Equal(t, pj.Blake2256OfExtrinsic, subtensor.ExtrinsicHash(unhex(t, in.Extrinsic)))
	hundred := make([]byte, 100)
	for i := range hundred {
		hundred[i] = byte(i)
	}
	require.Equal(t, pj.Twox64Of100Bytes, subtensor.Twox64Hex(hundred))
	require.Equal(t, pj.Blake2128OfNetuid, subtensor.Blake2b128Hex([]byte{byte(in.Netuid), byte(in.Netuid >> 8)}))
}

// TestPolkadotJSLive runs polkadot.js on freshly signed extrinsics when Node and the polkadot.js
// packages are at hand (subtensortest.RunPolkadotJS), and skips otherwise. With
// SUBTENSOR_WRITE_VECTORS=1 it rewrites the committed vectors.
func TestPolkadotJSLive(t *testing.T) {
	t.Parallel()
	var vectors []subtensortest.PolkadotVector
	for _, n := range []int{3, 64} {
		v := subtensortest.RunPolkadotJS(t, newVectorInput(t, n))
		checkVector(t, v)
		vectors = append(vectors, v)
	}
	if os.Getenv("SUBTENSOR_WRITE_VECTORS") == "1" {
		b, err := json.MarshalIndent(vectors, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(vectorsFile, append(b, '\n'), 0o644))
	}
}
