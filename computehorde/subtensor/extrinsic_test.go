package subtensor_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
	"drover.dev/computehorde/subtensor/subtensortest"
)

func TestMetadataSpec343(t *testing.T) {
	t.Parallel()
	m, err := subtensor.DecodeMetadata(subtensortest.Metadata(subtensortest.DefaultMetadataSpec()))
	require.NoError(t, err)
	require.NoError(t, m.CheckSigner())
	require.Equal(t, uint8(4), m.ExtrinsicVersion)
	ids := make([]string, len(m.SignedExtensions))
	for i, e := range m.SignedExtensions {
		ids[i] = e.Identifier
	}
	require.Equal(t, subtensortest.SpecExtensions, ids)
	c, err := m.Call("SubtensorModule", "set_weights")
	require.NoError(t, err)
	require.Equal(t, uint8(7), c.PalletIndex)
	require.Equal(t, uint8(0), c.Index)

	call, err := m.SetWeightsCall(12, []uint16{1, 5}, []uint16{65535, 300}, 7)
	require.NoError(t, err)
	require.Equal(t, "0700"+"0c00"+"08"+"0100"+"0500"+"08"+"ffff"+"2c01"+"0700000000000000", hex.EncodeToString(call))
}

// TestSignerRefusesUnknownExtension: a runtime listing a signed extension the signer does not
// know, or a known one in another shape, is refused before anything is signed.
func TestSignerRefusesUnknownExtension(t *testing.T) {
	t.Parallel()
	spec := subtensortest.DefaultMetadataSpec()
	spec.Extensions = append(append([]string{}, spec.Extensions...), "CheckSomethingNew")
	m, err := subtensor.DecodeMetadata(subtensortest.Metadata(spec))
	require.NoError(t, err)
	require.ErrorContains(t, m.CheckSigner(), "signed extensions this signer does not know: CheckSomethingNew")
	key, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	_, err = m.SignedExtrinsic([]byte{7, 0}, key, subtensor.TxParams{EraPeriod: 64})
	require.ErrorContains(t, err, "CheckSomethingNew")

	// A known identifier whose types differ (here CheckWeight sending a u32) is refused too.
	spec.Extensions = []string{"CheckNonZeroSender", "CheckSomethingNew"}
	b := subtensortest.Metadata(spec)
	m, err = subtensor.DecodeMetadata(b)
	require.NoError(t, err)
	m.SignedExtensions[1].Identifier = "CheckWeight"
	require.ErrorContains(t, m.CheckSigner(), "signed extension CheckWeight sends u32")
}

func TestSignedExtrinsicVerifies(t *testing.T) {
	t.Parallel()
	m, err := subtensor.DecodeMetadata(subtensortest.Metadata(subtensortest.DefaultMetadataSpec()))
	require.NoError(t, err)
	key, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	for _, n := range []int{2, 100} { // a short payload is signed as is, a long one hashed
		uids, weights := make([]uint16, n), make([]uint16, n)
		for i := range n {
			uids[i], weights[i] = uint16(i), uint16(1000+i)
		}
		call, err := m.SetWeightsCall(12, uids, weights, 0)
		require.NoError(t, err)
		p := subtensor.TxParams{SpecVersion: 343, TxVersion: 1, EraBlock: 1000, EraPeriod: 64, Nonce: 5, Genesis: [32]byte{1}, EraHash: [32]byte{2}}
		ext, err := m.SignedExtrinsic(call, key, p)
		require.NoError(t, err)
		// length ‖ 0x84 ‖ 0x00 ‖ signer ‖ 0x01 ‖ signature ‖ era ‖ nonce ‖ tip ‖ mode ‖ call
		body := ext[len(subtensor.AppendCompact(nil, uint64(len(ext)))):]
		pub := key.PublicKey()
		require.Equal(t, []byte{0x84, 0}, body[:2])
		require.Equal(t, pub[:], body[2:34])
		require.Equal(t, byte(1), body[34])
		sig := "0x" + hex.EncodeToString(body[35:99])
		era, err := subtensor.MortalEra(1000, 64)
		require.NoError(t, err)
		extra := append(append([]byte{}, era...), 5<<2, 0, 0)
		require.Equal(t, extra, body[99:104])
		require.Equal(t, call, body[104:])
		payload := append(append(append([]byte{}, call...), extra...), signedExtra(p)...)
		if len(payload) > 256 {
			payload = subtensor.Blake2b256(payload)
		}
		require.NoError(t, pub.Verify(payload, sig))
	}
}

func signedExtra(p subtensor.TxParams) []byte {
	b := []byte{byte(p.SpecVersion), byte(p.SpecVersion >> 8), 0, 0, byte(p.TxVersion), 0, 0, 0}
	b = append(append(b, p.Genesis[:]...), p.EraHash[:]...)
	return append(b, 0)
}

func TestMortalEra(t *testing.T) {
	t.Parallel()
	// Substrate's own example (sp_runtime::generic::Era's tests): period 64, phase 42.
	era, err := subtensor.MortalEra(42, 64)
	require.NoError(t, err)
	require.Equal(t, []byte{5 + 42%16<<4, 42 >> 4}, era)
	_, err = subtensor.MortalEra(1, 100)
	require.Error(t, err)
}

func TestNormalizeWeights(t *testing.T) {
	t.Parallel()
	uids, weights, err := subtensor.NormalizeWeights([]subtensor.UIDWeight{{9, 0.5}, {3, 0.25}, {4, 0}, {1, 1e-9}})
	require.NoError(t, err)
	require.Equal(t, []uint16{3, 9}, uids)
	require.Equal(t, []uint16{32768, 65535}, weights)
	_, _, err = subtensor.NormalizeWeights([]subtensor.UIDWeight{{1, -1}})
	require.Error(t, err)
	_, _, err = subtensor.NormalizeWeights([]subtensor.UIDWeight{{1, 1}, {1, 2}})
	require.Error(t, err)
}

// TestDecodeMetadataBadInput: truncated, padded or garbled metadata is an error, never a panic.
func TestDecodeMetadataBadInput(t *testing.T) {
	t.Parallel()
	good := subtensortest.Metadata(subtensortest.DefaultMetadataSpec())
	for i := 0; i < len(good); i += 1 + len(good)/500 {
		_, err := subtensor.DecodeMetadata(good[:i])
		require.Error(t, err, i)
		bad := append([]byte{}, good...)
		bad[i] ^= 0xff
		_, _ = subtensor.DecodeMetadata(bad)
	}
	_, err := subtensor.DecodeMetadata(append(append([]byte{}, good...), 0))
	require.ErrorContains(t, err, "after the end")
	v15 := append([]byte{}, good...)
	v15[4] = 15
	_, err = subtensor.DecodeMetadata(v15)
	require.ErrorContains(t, err, "only V14")
	require.True(t, strings.HasPrefix(hex.EncodeToString(good), "6d657461"))
}

// TestShapeOfAHostileRegistry: a type of 4,096 fields each of itself shapes in bounded work. Cut
// off at the depth limit alone its shape would have 4,096^16 leaves, and the test would never
// end; the visit budget leaves at most one level of 4,096 cut-offs per depth.
func TestShapeOfAHostileRegistry(t *testing.T) {
	t.Parallel()
	spec := subtensortest.DefaultMetadataSpec()
	spec.WideSelfType = 4096
	m, err := subtensor.DecodeMetadata(subtensortest.Metadata(spec))
	require.NoError(t, err)
	shape := m.Shape(subtensortest.WideSelfTypeID)
	require.Contains(t, shape, "…")
	require.LessOrEqual(t, strings.Count(shape, "…"), 17*4096, "cut off by the visit budget")
}
