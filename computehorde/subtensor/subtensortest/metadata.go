package subtensortest

import (
	"encoding/binary"
	"slices"
	"strconv"

	"drover.dev/computehorde/subtensor"
)

// SpecExtensions are the signed extensions of subtensor's runtime at spec 343, in order.
var SpecExtensions = []string{
	"CheckNonZeroSender", "CheckWeight", "SubtensorTransactionExtension", "DrandPriority",
	"CheckSpecVersion", "CheckTxVersion", "CheckGenesis", "CheckMortality", "CheckNonce",
	"ChargeTransactionPayment", "CheckMetadataHash",
}

// MetadataSpec describes the runtime metadata Metadata builds.
type MetadataSpec struct {
	Extensions []string // identifiers; one not in SpecExtensions sends a u32
	// SubtensorIndex and SetWeightsIndex are the pallet and call indices of set_weights.
	SubtensorIndex, SetWeightsIndex uint8
	// Defaults of the subnet hyperparameters read from storage.
	CommitRevealDefault              bool
	RateLimitDefault, VersionDefault uint64
	// WideSelfType, when not zero, adds type WideSelfTypeID: a composite of that many fields, each
	// of itself (a hostile registry).
	WideSelfType int
}

// DefaultMetadataSpec is spec 343's layout: SubtensorModule at pallet 7, set_weights call 0.
func DefaultMetadataSpec() MetadataSpec {
	return MetadataSpec{Extensions: SpecExtensions, SubtensorIndex: 7, CommitRevealDefault: true, RateLimitDefault: 100}
}

// Type ids of the registry Metadata writes.
const (
	tU8 = iota
	tU16
	tU32
	tU64
	tBool
	tBytes32
	tH256
	tAccountID
	tCompactU32
	tCompactU64
	tVecU16
	tUnit
	tEra
	tOptionH256
	tMode
	tCheckMetadataHash
	tCheckNonce
	tChargeTx
	tNetUID
	tSubtensorCall
	tRuntimeCall
	tVecU8
	tSystemCall
	tMultiAddress
	tMultiSignature
	tBytes64
	tBytes65
	tUncheckedExtrinsic
	tExtra
	tRuntime
	tBytes20
	// WideSelfTypeID is the id of MetadataSpec.WideSelfType's type.
	WideSelfTypeID = tBytes20 + 1
)

// w writes SCALE for the metadata builder.
type w struct{ b []byte }

func (e *w) u8(v uint8)       { e.b = append(e.b, v) }
func (e *w) u32(v uint32)     { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *w) compact(v uint64) { e.b = subtensor.AppendCompact(e.b, v) }
func (e *w) str(s string)     { e.compact(uint64(len(s))); e.b = append(e.b, s...) }
func (e *w) bytes(b []byte)   { e.compact(uint64(len(b))); e.b = append(e.b, b...) }
func (e *w) strs(ss ...string) {
	e.compact(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

type field struct {
	name string // "" for an unnamed field
	ty   uint64
}

func (e *w) fields(fs ...field) {
	e.compact(uint64(len(fs)))
	for _, f := range fs {
		if f.name == "" {
			e.u8(0)
		} else {
			e.u8(1)
			e.str(f.name)
		}
		e.compact(f.ty)
		e.u8(0)  // no type name
		e.strs() // docs
	}
}

type param struct {
	name string
	ty   uint64
}

// typ starts type id: its path and parameters; the definition follows, then end() its docs.
func (e *w) typ(id uint64, path []string, params ...param) {
	e.compact(id)
	e.strs(path...)
	e.compact(uint64(len(params)))
	for _, p := range params {
		e.str(p.name)
		e.u8(1)
		e.compact(p.ty)
	}
}

func (e *w) primitive(id uint64, prim uint8) {
	e.typ(id, nil)
	e.u8(5)
	e.u8(prim)
	e.strs()
}

func (e *w) composite(id uint64, path []string, fs ...field) {
	e.typ(id, path)
	e.u8(0)
	e.fields(fs...)
	e.strs()
}

type variant struct {
	name   string
	index  uint8
	fields []field
}

func (e *w) variants(id uint64, path []string, params []param, vs ...variant) {
	e.typ(id, path, params...)
	e.u8(1)
	e.compact(uint64(len(vs)))
	for _, v := range vs {
		e.str(v.name)
		e.fields(v.fields...)
		e.u8(v.index)
		e.strs()
	}
	e.strs()
}

func (e *w) array(id uint64, n uint32, elem uint64) {
	e.typ(id, nil)
	e.u8(3)
	e.u32(n)
	e.compact(elem)
	e.strs()
}

func (e *w) wrap(id uint64, kind uint8, elem uint64) {
	e.typ(id, nil)
	e.u8(kind)
	e.compact(elem)
	e.strs()
}

func (e *w) tuple(id uint64, elems ...uint64) {
	e.typ(id, nil)
	e.u8(4)
	e.compact(uint64(len(elems)))
	for _, t := range elems {
		e.compact(t)
	}
	e.strs()
}

// extensionTypes are the (sent, signed) types of each known signed extension.
var extensionTypes = map[string][2]uint64{
	"CheckSpecVersion": {tUnit, tU32}, "CheckTxVersion": {tUnit, tU32}, "CheckGenesis": {tUnit, tH256},
	"CheckMortality": {tEra, tH256}, "CheckNonce": {tCheckNonce, tUnit}, "ChargeTransactionPayment": {tChargeTx, tUnit},
	"CheckMetadataHash": {tCheckMetadataHash, tOptionH256},
}

// Metadata builds a V14 runtime metadata (state_getMetadata's bytes) holding what a set_weights
// signer reads: a type registry, System and SubtensorModule with set_weights and the three
// weight hyperparameters in storage, and the extrinsic's signed extensions.
func Metadata(spec MetadataSpec) []byte {
	e := &w{}
	e.u32(0x6174656d) // "meta"
	e.u8(14)
	extTypes := make([]uint64, len(spec.Extensions))
	for i, id := range spec.Extensions {
		extTypes[i] = tUnit
		if t, ok := extensionTypes[id]; ok {
			extTypes[i] = t[0]
		} else if !slices.Contains(SpecExtensions, id) {
			extTypes[i] = tU32
		}
	}
	if spec.WideSelfType > 0 {
		e.compact(WideSelfTypeID + 1)
	} else {
		e.compact(WideSelfTypeID)
	}
	for _, p := range []struct {
		id   uint64
		prim uint8
	}{{tU8, 3}, {tU16, 4}, {tU32, 5}, {tU64, 6}, {tBool, 0}} {
		e.primitive(p.id, p.prim)
	}
	e.array(tBytes32, 32, tU8)
	e.composite(tH256, []string{"primitive_types", "H256"}, field{"", tBytes32})
	e.composite(tAccountID, []string{"sp_core", "crypto", "AccountId32"}, field{"", tBytes32})
	e.wrap(tCompactU32, 6, tU32)
	e.wrap(tCompactU64, 6, tU64)
	e.wrap(tVecU16, 2, tU16)
	e.tuple(tUnit)
	era := []variant{{"Immortal", 0, nil}}
	for i := 1; i < 256; i++ {
		era = append(era, variant{"Mortal" + strconv.Itoa(i), uint8(i), []field{{"", tU8}}})
	}
	e.variants(tEra, []string{"sp_runtime", "generic", "era", "Era"}, nil, era...)
	e.variants(tOptionH256, []string{"Option"}, []param{{"T", tH256}}, variant{"None", 0, nil}, variant{"Some", 1, []field{{"", tH256}}})
	e.variants(tMode, []string{"frame_metadata_hash_extension", "Mode"}, nil, variant{"Disabled", 0, nil}, variant{"Enabled", 1, nil})
	e.composite(tCheckMetadataHash, []string{"frame_metadata_hash_extension", "CheckMetadataHash"}, field{"mode", tMode})
	e.composite(tCheckNonce, []string{"frame_system", "extensions", "check_nonce", "CheckNonce"}, field{"", tCompactU32})
	e.composite(tChargeTx, []string{"pallet_transaction_payment", "ChargeTransactionPayment"}, field{"", tCompactU64})
	e.composite(tNetUID, []string{"subtensor_runtime_common", "NetUid"}, field{"", tU16})
	e.variants(tSubtensorCall, []string{"pallet_subtensor", "pallet", "Call"}, nil, variant{"set_weights", spec.SetWeightsIndex, []field{
		{"netuid", tNetUID}, {"dests", tVecU16}, {"weights", tVecU16}, {"version_key", tU64},
	}})
	e.variants(tRuntimeCall, []string{"node_subtensor_runtime", "RuntimeCall"}, nil,
		variant{"System", 0, []field{{"", tSystemCall}}}, variant{"SubtensorModule", spec.SubtensorIndex, []field{{"", tSubtensorCall}}})
	e.wrap(tVecU8, 2, tU8)
	e.variants(tSystemCall, []string{"frame_system", "pallet", "Call"}, nil, variant{"remark", 0, []field{{"remark", tVecU8}}})
	e.variants(tMultiAddress, []string{"sp_runtime", "multiaddress", "MultiAddress"}, []param{{"AccountId", tAccountID}},
		variant{"Id", 0, []field{{"", tAccountID}}}, variant{"Raw", 2, []field{{"", tVecU8}}},
		variant{"Address32", 3, []field{{"", tBytes32}}}, variant{"Address20", 4, []field{{"", tBytes20}}})
	e.variants(tMultiSignature, []string{"sp_runtime", "MultiSignature"}, nil,
		variant{"Ed25519", 0, []field{{"", tBytes64}}}, variant{"Sr25519", 1, []field{{"", tBytes64}}}, variant{"Ecdsa", 2, []field{{"", tBytes65}}})
	e.array(tBytes64, 64, tU8)
	e.array(tBytes65, 65, tU8)
	e.typ(tUncheckedExtrinsic, []string{"sp_runtime", "generic", "unchecked_extrinsic", "UncheckedExtrinsic"},
		param{"Address", tMultiAddress}, param{"Call", tRuntimeCall}, param{"Signature", tMultiSignature}, param{"Extra", tExtra})
	e.u8(0)
	e.fields(field{"", tVecU8})
	e.strs()
	e.tuple(tExtra, extTypes...)
	e.composite(tRuntime, []string{"node_subtensor_runtime", "Runtime"})
	e.array(tBytes20, 20, tU8)
	if spec.WideSelfType > 0 {
		fs := make([]field, spec.WideSelfType)
		for i := range fs {
			fs[i] = field{"", WideSelfTypeID}
		}
		e.composite(WideSelfTypeID, []string{"Wide"}, fs...)
	}

	e.compact(2) // pallets
	// System: no storage, remark, SS58Prefix 42.
	e.str("System")
	e.u8(0)
	e.u8(1)
	e.compact(tSystemCall)
	e.u8(0)
	e.compact(1)
	e.str("SS58Prefix")
	e.compact(tU16)
	e.bytes([]byte{42, 0})
	e.strs()
	e.u8(0)
	e.u8(0)
	// SubtensorModule: the three hyperparameters, set_weights.
	e.str("SubtensorModule")
	e.u8(1)
	e.str("SubtensorModule")
	e.compact(3)
	storageMap(e, "CommitRevealWeightsEnabled", tBool, boolByte(spec.CommitRevealDefault))
	storageMap(e, "WeightsSetRateLimit", tU64, binary.LittleEndian.AppendUint64(nil, spec.RateLimitDefault))
	storageMap(e, "WeightsVersionKey", tU64, binary.LittleEndian.AppendUint64(nil, spec.VersionDefault))
	e.u8(1)
	e.compact(tSubtensorCall)
	e.u8(0)
	e.compact(0)
	e.u8(0)
	e.u8(spec.SubtensorIndex)

	e.compact(tUncheckedExtrinsic)
	e.u8(4)
	e.compact(uint64(len(spec.Extensions)))
	for i, id := range spec.Extensions {
		e.str(id)
		e.compact(extTypes[i])
		additional := uint64(tUnit)
		if t, ok := extensionTypes[id]; ok {
			additional = t[1]
		}
		e.compact(additional)
	}
	e.compact(tRuntime)
	return e.b
}

// storageMap writes a map keyed by NetUid (Identity hasher), with a default value.
func storageMap(e *w, name string, value uint64, def []byte) {
	e.str(name)
	e.u8(1) // Default
	e.u8(1) // Map
	e.compact(1)
	e.u8(6) // hasher: Identity
	e.compact(tNetUID)
	e.compact(value)
	e.bytes(def)
	e.strs()
}

func boolByte(v bool) []byte {
	if v {
		return []byte{1}
	}
	return []byte{0}
}
