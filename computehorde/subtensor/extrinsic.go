package subtensor

import (
	"encoding/hex"
	"fmt"
	"math/bits"
	"strings"

	"drover.dev/computehorde/hotkey"
)

// extensionShapes are the signed extensions this signer knows, with the shapes of what each sends
// in the extrinsic and what it only signs (Metadata.Shape). A runtime listing any other, or one
// of these in another shape, is refused: signing past an extension whose bytes are unknown
// would build an extrinsic the chain rejects, or one that means something else.
var extensionShapes = map[string][2]string{
	"CheckNonZeroSender":            {"()", "()"},
	"CheckWeight":                   {"()", "()"},
	"SubtensorTransactionExtension": {"()", "()"},
	"SubtensorSignedExtension":      {"()", "()"}, // its name in runtimes before spec 273
	"DrandPriority":                 {"()", "()"},
	"CheckSpecVersion":              {"()", "u32"},
	"CheckTxVersion":                {"()", "u32"},
	"CheckGenesis":                  {"()", "[u8;32]"},
	"CheckMortality":                {"era", "[u8;32]"},
	"CheckEra":                      {"era", "[u8;32]"},
	"CheckNonce":                    {"compact<u32>", "()"},
	"ChargeTransactionPayment":      {"compact<u64>", "()"},
	"CheckMetadataHash":             {"enum", "option<[u8;32]>"},
}

// TxParams are the per-transaction inputs of a signed extrinsic, read from the node.
type TxParams struct {
	SpecVersion, TxVersion uint32
	Genesis                [32]byte
	// EraBlock and EraHash are the block the mortal era starts at (a recent one) and its hash;
	// EraPeriod (a power of two, 4 to 65536) is how many blocks the extrinsic stays valid.
	EraBlock  uint64
	EraHash   [32]byte
	EraPeriod uint64
	Nonce     uint32
	Tip       uint64
}

// CheckSigner refuses a runtime this signer cannot sign for: an extrinsic version other than 4,
// an address or signature type other than MultiAddress and MultiSignature, or a signed extension
// it does not know (or knows in another shape).
func (m *Metadata) CheckSigner() error {
	if m.ExtrinsicVersion != 4 {
		return fmt.Errorf("runtime metadata: extrinsic version %d, only 4 is signed", m.ExtrinsicVersion)
	}
	for param, want := range map[string]string{"Address": "MultiAddress", "Signature": "MultiSignature"} {
		if got := m.extrinsicParam(param); got != "" && got != want {
			return fmt.Errorf("runtime metadata: the extrinsic's %s is %s, only %s is signed", param, got, want)
		}
	}
	var unknown []string
	for _, ext := range m.SignedExtensions {
		want, ok := extensionShapes[ext.Identifier]
		if !ok {
			unknown = append(unknown, ext.Identifier)
			continue
		}
		if got := [2]string{m.Shape(ext.Ty), m.Shape(ext.AdditionalTy)}; got != want {
			return fmt.Errorf("runtime metadata: signed extension %s sends %s and signs %s; this signer knows it as %s and %s", ext.Identifier, got[0], got[1], want[0], want[1])
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("runtime metadata lists signed extensions this signer does not know: %s; refusing to sign", strings.Join(unknown, ", "))
	}
	return nil
}

// MortalEra encodes a mortal era of period blocks starting at block (Substrate's Era::mortal):
// the period's log2 − 1 in the low 4 bits, the quantized phase above.
func MortalEra(block, period uint64) ([]byte, error) {
	if period < 4 || period > 1<<16 || period&(period-1) != 0 {
		return nil, fmt.Errorf("era period %d: a power of two from 4 to 65536", period)
	}
	quantize := max(period>>12, 1)
	phase := block % period / quantize
	enc := uint16(min(max(bits.TrailingZeros64(period)-1, 1), 15)) | uint16(phase)<<4
	return []byte{byte(enc), byte(enc >> 8)}, nil
}

// SignedExtrinsic builds the v4 signed extrinsic of call: signer key as MultiAddress::Id, an
// sr25519 MultiSignature over the signing payload, extra laid out as the metadata's signed
// extensions list them. It returns the extrinsic with its length prefix, as
// author_submitExtrinsic takes it.
func (m *Metadata) SignedExtrinsic(call []byte, key *hotkey.Keypair, p TxParams) ([]byte, error) {
	return m.BuildSigned(call, key.PublicKey(), p, func(payload []byte) ([]byte, error) {
		sig, err := hex.DecodeString(strings.TrimPrefix(key.Sign(payload), "0x"))
		if err != nil || len(sig) != 64 {
			return nil, fmt.Errorf("sr25519 signature: %d bytes", len(sig))
		}
		return sig, nil
	})
}

// BuildSigned is SignedExtrinsic with the signature made by sign, which gets the signing payload:
// call ‖ extra ‖ additional signed, BLAKE2b-256 hashed when longer than 256 bytes.
func (m *Metadata) BuildSigned(call []byte, signer hotkey.PublicKey, p TxParams, sign func(payload []byte) ([]byte, error)) ([]byte, error) {
	if err := m.CheckSigner(); err != nil {
		return nil, err
	}
	era, err := MortalEra(p.EraBlock, p.EraPeriod)
	if err != nil {
		return nil, err
	}
	extra, additional := &encoder{}, &encoder{}
	for _, ext := range m.SignedExtensions {
		switch ext.Identifier {
		case "CheckSpecVersion":
			additional.u32(p.SpecVersion)
		case "CheckTxVersion":
			additional.u32(p.TxVersion)
		case "CheckGenesis":
			additional.raw(p.Genesis[:])
		case "CheckMortality", "CheckEra":
			extra.raw(era)
			additional.raw(p.EraHash[:])
		case "CheckNonce":
			extra.compact(uint64(p.Nonce))
		case "ChargeTransactionPayment":
			extra.compact(p.Tip)
		case "CheckMetadataHash":
			extra.u8(0)      // mode: disabled
			additional.u8(0) // no metadata hash
		}
	}
	payload := append(append(append([]byte{}, call...), extra.b...), additional.b...)
	if len(payload) > 256 {
		payload = Blake2b256(payload)
	}
	sig, err := sign(payload)
	if err != nil {
		return nil, err
	}
	if len(sig) != 64 {
		return nil, fmt.Errorf("sr25519 signature of %d bytes", len(sig))
	}
	body := &encoder{}
	body.u8(0x80 | 4) // signed, version 4
	body.u8(0)        // MultiAddress::Id
	body.raw(signer[:])
	body.u8(1) // MultiSignature::Sr25519
	body.raw(sig)
	body.raw(extra.b)
	body.raw(call)
	return append(AppendCompact(nil, uint64(len(body.b))), body.b...), nil
}

// ExtrinsicHash is the hash a node gives a transaction: BLAKE2b-256 of the extrinsic as submitted.
func ExtrinsicHash(extrinsic []byte) string {
	return "0x" + hex.EncodeToString(Blake2b256(extrinsic))
}
