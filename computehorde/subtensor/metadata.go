package subtensor

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of a metadata decode: far above what a subtensor runtime holds (about 1,000 types and
// 40 pallets), small enough that a hostile node cannot make the decoder allocate much.
const (
	MaxMetadataBytes = 16 << 20
	maxTypes         = 1 << 16
	maxItems         = 1 << 12 // fields, variants, pallets, entries, doc lines … of one list
	maxString        = 1 << 16
	maxShapeDepth    = 16
	maxShapeVisits   = 1 << 10
)

// Type kinds of scale-info's TypeDef, in its variant order.
const (
	kindComposite = iota
	kindVariant
	kindSequence
	kindArray
	kindTuple
	kindPrimitive
	kindCompact
	kindBitSequence
)

var primitiveNames = []string{"bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "u256", "i8", "i16", "i32", "i64", "i128", "i256"}

// metaType is what the signer keeps of one registry type: enough to name its encoded shape.
type metaType struct {
	path     []string
	params   map[string]uint32 // type parameters with a type
	kind     int
	fields   []metaField // composite fields
	variants []metaVariant
	elems    []uint32 // tuple members; the single element of sequence, array and compact
	length   uint32   // array length
	prim     int
}

type metaField struct {
	name string
	ty   uint32
}

type metaVariant struct {
	name   string
	index  uint8
	fields []metaField
}

// StorageEntry is one storage item of a pallet.
type StorageEntry struct {
	Name    string
	Hashers []Hasher // empty for a plain value
	Key     uint32   // the key's type (a map)
	Value   uint32
	Default []byte
}

// Hasher is a storage map's key hasher, in the metadata's enum order.
type Hasher uint8

// The storage hashers.
const (
	HasherBlake2128 Hasher = iota
	HasherBlake2256
	HasherBlake2128Concat
	HasherTwox128
	HasherTwox256
	HasherTwox64Concat
	HasherIdentity
)

// SignedExtension is one entry of the extrinsic's signed-extension list: what it sends (ty) and
// what it only signs (additional_signed).
type SignedExtension struct {
	Identifier       string
	Ty, AdditionalTy uint32
}

type pallet struct {
	name, storagePrefix string
	storage             map[string]StorageEntry
	calls               *uint32
	index               uint8
}

// Metadata is what the signer reads of a runtime's V14 metadata: the type registry, each
// pallet's storage and calls, and the extrinsic's version and signed extensions.
type Metadata struct {
	types            map[uint32]*metaType
	pallets          map[string]*pallet
	ExtrinsicVersion uint8
	extrinsicTy      uint32
	SignedExtensions []SignedExtension
}

// DecodeMetadata decodes state_getMetadata's answer (RuntimeMetadataPrefixed: "meta", then the
// version). Only V14 is read: it is what state_getMetadata answers, and every later version is
// reached only through the Metadata_metadata_at_version runtime API.
func DecodeMetadata(b []byte) (*Metadata, error) {
	if len(b) > MaxMetadataBytes {
		return nil, fmt.Errorf("metadata: %d bytes, at most %d read", len(b), MaxMetadataBytes)
	}
	d := &decoder{b: b}
	if magic := d.u32(); d.err == nil && magic != 0x6174656d {
		return nil, fmt.Errorf("metadata: magic %#x is not \"meta\"", magic)
	}
	if v := d.u8(); d.err == nil && v != 14 {
		return nil, fmt.Errorf("metadata: version %d, only V14 is read", v)
	}
	m := &Metadata{types: map[uint32]*metaType{}, pallets: map[string]*pallet{}}
	nTypes := d.length(maxTypes, 4, "types")
	for i := 0; i < nTypes && d.err == nil; i++ {
		id := uint32(d.compactMax(1<<32-1, "type id"))
		t := d.metaType()
		if _, dup := m.types[id]; dup && d.err == nil {
			d.fail(fmt.Errorf("metadata: type %d twice", id))
		}
		m.types[id] = t
	}
	nPallets := d.length(maxItems, 6, "pallets")
	for i := 0; i < nPallets && d.err == nil; i++ {
		p := d.pallet()
		m.pallets[p.name] = p
	}
	m.extrinsicTy = d.typeID()
	m.ExtrinsicVersion = d.u8()
	nExt := d.length(maxItems, 3, "signed extensions")
	for i := 0; i < nExt && d.err == nil; i++ {
		m.SignedExtensions = append(m.SignedExtensions, SignedExtension{Identifier: d.str(), Ty: d.typeID(), AdditionalTy: d.typeID()})
	}
	d.typeID() // the runtime type
	if d.err == nil && d.off != len(b) {
		d.fail(fmt.Errorf("metadata: %d bytes after the end", len(b)-d.off))
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode metadata: %w", d.err)
	}
	return m, nil
}

func (d *decoder) typeID() uint32 { return uint32(d.compactMax(1<<32-1, "type id")) }

func (d *decoder) str() string {
	n := d.length(maxString, 1, "string")
	s := d.take(n)
	if d.err == nil && !utf8.Valid(s) {
		d.fail(errors.New("scale: string is not UTF-8"))
	}
	return string(s)
}

func (d *decoder) strings() []string {
	n := d.length(maxItems, 1, "strings")
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}

func (d *decoder) skipStrings() {
	n := d.length(maxItems*16, 1, "doc lines")
	for i := 0; i < n && d.err == nil; i++ {
		d.take(d.length(maxString, 1, "string"))
	}
}

// option reads an Option's tag: whether a value follows.
func (d *decoder) option() bool {
	switch v := d.u8(); {
	case d.err != nil:
		return false
	case v == 0 || v == 1:
		return v == 1
	default:
		d.fail(fmt.Errorf("scale: option tag %d", v))
		return false
	}
}

func (d *decoder) metaType() *metaType {
	t := &metaType{path: d.strings(), params: map[string]uint32{}}
	nParams := d.length(maxItems, 2, "type parameters")
	for i := 0; i < nParams && d.err == nil; i++ {
		name := d.str()
		if d.option() {
			t.params[name] = d.typeID()
		}
	}
	t.kind = int(d.u8())
	switch t.kind {
	case kindComposite:
		t.fields = d.fields()
	case kindVariant:
		n := d.length(maxItems, 4, "variants")
		for i := 0; i < n && d.err == nil; i++ {
			v := metaVariant{name: d.str(), fields: d.fields()}
			v.index = d.u8()
			d.skipStrings()
			t.variants = append(t.variants, v)
		}
	case kindSequence, kindCompact:
		t.elems = []uint32{d.typeID()}
	case kindArray:
		t.length = d.u32()
		t.elems = []uint32{d.typeID()}
	case kindTuple:
		n := d.length(maxItems, 1, "tuple members")
		for i := 0; i < n && d.err == nil; i++ {
			t.elems = append(t.elems, d.typeID())
		}
	case kindPrimitive:
		t.prim = int(d.u8())
		if d.err == nil && t.prim >= len(primitiveNames) {
			d.fail(fmt.Errorf("metadata: primitive %d", t.prim))
		}
	case kindBitSequence:
		t.elems = []uint32{d.typeID(), d.typeID()}
	default:
		if d.err == nil {
			d.fail(fmt.Errorf("metadata: type definition %d", t.kind))
		}
	}
	d.skipStrings() // docs
	return t
}

func (d *decoder) fields() []metaField {
	n := d.length(maxItems, 4, "fields")
	out := make([]metaField, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var f metaField
		if d.option() {
			f.name = d.str()
		}
		f.ty = d.typeID()
		if d.option() {
			d.str() // the type's name in the source
		}
		d.skipStrings()
		out = append(out, f)
	}
	return out
}

func (d *decoder) pallet() *pallet {
	p := &pallet{name: d.str(), storage: map[string]StorageEntry{}}
	if d.option() {
		p.storagePrefix = d.str()
		n := d.length(maxItems, 5, "storage entries")
		for i := 0; i < n && d.err == nil; i++ {
			e := d.storageEntry()
			p.storage[e.Name] = e
		}
	}
	if d.option() {
		p.calls = new(d.typeID())
	}
	if d.option() {
		d.typeID() // events
	}
	nConst := d.length(maxItems, 4, "constants")
	for i := 0; i < nConst && d.err == nil; i++ {
		d.str()
		d.typeID()
		d.take(d.length(MaxMetadataBytes, 1, "constant value"))
		d.skipStrings()
	}
	if d.option() {
		d.typeID() // errors
	}
	p.index = d.u8()
	return p
}

func (d *decoder) storageEntry() StorageEntry {
	e := StorageEntry{Name: d.str()}
	d.u8() // modifier: Optional or Default; an absent value reads as the default either way
	switch kind := d.u8(); kind {
	case 0:
		e.Value = d.typeID()
	case 1:
		n := d.length(maxItems, 1, "hashers")
		for i := 0; i < n && d.err == nil; i++ {
			h := Hasher(d.u8())
			if h > HasherIdentity && d.err == nil {
				d.fail(fmt.Errorf("metadata: storage hasher %d", h))
			}
			e.Hashers = append(e.Hashers, h)
		}
		e.Key, e.Value = d.typeID(), d.typeID()
	default:
		if d.err == nil {
			d.fail(fmt.Errorf("metadata: storage entry type %d", kind))
		}
	}
	e.Default = append([]byte(nil), d.take(d.length(MaxMetadataBytes, 1, "storage default"))...)
	d.skipStrings()
	return e
}

// Shape names how type id encodes, ignoring names: "()" for nothing, a primitive's name,
// "compact<T>", "vec<T>", "[T;n]", "(A,B)", "option<T>", "era" (sp_runtime's Era), "enum" (a
// variant type whose variants carry nothing) or "variant:Name". A composite or tuple of one
// member (once members of shape "()", such as PhantomData, are dropped) has its member's shape.
// Types nested deeper than 16, or more than 1,024 types visited (a hostile registry of wide,
// self-referencing types), shape as "…", which matches nothing the signer expects.
func (m *Metadata) Shape(id uint32) string {
	budget := maxShapeVisits
	return m.shape(id, 0, &budget)
}

func (m *Metadata) shape(id uint32, depth int, budget *int) string {
	*budget--
	t, ok := m.types[id]
	switch {
	case !ok:
		return fmt.Sprintf("?%d", id)
	case depth > maxShapeDepth || *budget < 0:
		return "…"
	}
	sub := func(id uint32) string { return m.shape(id, depth+1, budget) }
	switch t.kind {
	case kindComposite, kindTuple:
		var parts []string
		for _, f := range t.fields {
			if s := sub(f.ty); s != "()" {
				parts = append(parts, s)
			}
		}
		for _, e := range t.elems {
			if s := sub(e); s != "()" {
				parts = append(parts, s)
			}
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return "(" + strings.Join(parts, ",") + ")"
	case kindPrimitive:
		return primitiveNames[t.prim]
	case kindCompact:
		return "compact<" + sub(t.elems[0]) + ">"
	case kindSequence:
		return "vec<" + sub(t.elems[0]) + ">"
	case kindArray:
		return fmt.Sprintf("[%s;%d]", sub(t.elems[0]), t.length)
	case kindBitSequence:
		return "bits"
	}
	name := ""
	if len(t.path) > 0 {
		name = t.path[len(t.path)-1]
	}
	switch {
	case name == "Option" && len(t.variants) == 2 && len(t.variants[1].fields) == 1:
		return "option<" + sub(t.variants[1].fields[0].ty) + ">"
	case name == "Era":
		return "era"
	}
	for _, v := range t.variants {
		if len(v.fields) > 0 {
			return "variant:" + name
		}
	}
	return "enum"
}

// Call is a pallet's call as the runtime metadata lays it out: the two index bytes and each
// argument's name and shape.
type Call struct {
	Pallet, Name       string
	PalletIndex, Index uint8
	Args               []CallArg
}

// CallArg is one argument of a call.
type CallArg struct{ Name, Shape string }

// Call finds pallet's call name.
func (m *Metadata) Call(palletName, name string) (Call, error) {
	p, ok := m.pallets[palletName]
	if !ok || p.calls == nil {
		return Call{}, fmt.Errorf("runtime metadata: no pallet %s with calls", palletName)
	}
	t, ok := m.types[*p.calls]
	if !ok || t.kind != kindVariant {
		return Call{}, fmt.Errorf("runtime metadata: %s's call type %d is not an enum", palletName, *p.calls)
	}
	for _, v := range t.variants {
		if v.name != name {
			continue
		}
		c := Call{Pallet: palletName, Name: name, PalletIndex: p.index, Index: v.index}
		for _, f := range v.fields {
			c.Args = append(c.Args, CallArg{Name: f.name, Shape: m.Shape(f.ty)})
		}
		return c, nil
	}
	return Call{}, fmt.Errorf("runtime metadata: %s has no call %s", palletName, name)
}

// Storage finds a pallet's storage entry and the prefix its keys start with.
func (m *Metadata) Storage(palletName, name string) (StorageEntry, string, error) {
	p, ok := m.pallets[palletName]
	if !ok {
		return StorageEntry{}, "", fmt.Errorf("runtime metadata: no pallet %s", palletName)
	}
	e, ok := p.storage[name]
	if !ok {
		return StorageEntry{}, "", fmt.Errorf("runtime metadata: %s has no storage %s", palletName, name)
	}
	return e, p.storagePrefix, nil
}

// extrinsicParam is the shape's name (the path's last segment) of the extrinsic type's
// parameter name (Address, Signature …); "" when the metadata does not say.
func (m *Metadata) extrinsicParam(name string) string {
	t, ok := m.types[m.extrinsicTy]
	if !ok {
		return ""
	}
	id, ok := t.params[name]
	if !ok {
		return ""
	}
	p, ok := m.types[id]
	if !ok || len(p.path) == 0 {
		return ""
	}
	return p.path[len(p.path)-1]
}
