package jsonwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Unmarshal checks that data is a JSON object, as ParseObject does, and decodes it into dst as
// Object.Decode does.
func Unmarshal(data []byte, dst any, tag string) error {
	o, err := ParseObject(data)
	if err != nil {
		return err
	}
	return o.Decode(dst, tag)
}

// Decode decodes the object into dst, a pointer, as json.Unmarshal does except for which member
// a field takes. pydantic binds a member only to the field whose name equals its key, after
// unescaping, and ignores the rest; encoding/json also binds keys that differ in case
// ("JOB_UUID" to job_uuid, the last of several winning), so a peer could make us read a value
// upstream never sees. Decode first drops every member whose key is not the exact JSON name of
// a field, in the object and in the objects nested in it, down to the types that unmarshal
// themselves (they must decode through Decode too). tag names a member dst has no field for
// that is not stray, the object's discriminator ("" for none).
//
// An object without stray members, what upstream sends, costs one scan and no allocation.
func (o Object) Decode(dst any, tag string) error {
	data := bytes.TrimSpace(o)
	if kept, dropped := shapeOf(reflect.TypeOf(dst)).keep(data, tag); dropped {
		data = kept
	}
	return json.Unmarshal(data, dst)
}

// shape is what matters of a Go type for which JSON keys it takes: a struct's fields by exact
// JSON name, and what its slices and maps hold. A nil *shape takes no keys to check: scalars,
// interfaces, raw JSON and types with their own UnmarshalJSON.
type shape struct {
	kind   reflect.Kind      // reflect.Struct, reflect.Slice (for arrays too) or reflect.Map
	fields map[string]*shape // a struct's fields by JSON name
	elem   *shape            // a slice's elements or a map's values
}

var (
	shapes          sync.Map // reflect.Type → *shape
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// shapeOf returns the shape of t, built once per type.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := newShape(t, map[reflect.Type]*shape{})
	shapes.Store(t, s)
	return s
}

// newShape builds the shape of t. seen holds the types built or being built, so recursive
// types end: a struct is entered before its fields are built; a slice or map type met again
// while it is built is part of a cycle with no struct in it, which takes no keys.
func newShape(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	if s, ok := seen[t]; ok {
		return s
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return newShape(t.Elem(), seen)
	case reflect.Struct:
		s := &shape{kind: reflect.Struct, fields: map[string]*shape{}}
		seen[t] = s
		addFields(s.fields, t, seen)
		return s
	case reflect.Slice, reflect.Array, reflect.Map:
		seen[t] = nil
		var s *shape
		if elem := newShape(t.Elem(), seen); elem != nil {
			s = &shape{kind: reflect.Slice, elem: elem}
			if t.Kind() == reflect.Map {
				s.kind = reflect.Map
			}
		}
		seen[t] = s
		return s
	}
	return nil
}

// addFields records the fields of struct t by JSON name as encoding/json finds them: fields of
// embedded structs are promoted, a level at a time, and a name hides the same name deeper
// down. Two fields of one name at one depth, which encoding/json settles by tag or drops, are
// not expected in wire types; the last is kept.
func addFields(fields map[string]*shape, t reflect.Type, seen map[reflect.Type]*shape) {
	visited := map[reflect.Type]bool{}
	for level := []reflect.Type{t}; len(level) > 0; {
		var next []reflect.Type
		found := map[string]*shape{}
		for _, st := range level {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				name, embedded := jsonName(st.Field(i))
				if embedded != nil {
					next = append(next, embedded)
				} else if _, hidden := fields[name]; name != "" && !hidden {
					found[name] = newShape(st.Field(i).Type, seen)
				}
			}
		}
		for name, s := range found {
			fields[name] = s
		}
		level = next
	}
}

// jsonName returns the JSON name of a struct field, or the struct type whose fields an
// untagged embedded field promotes, or neither for a field encoding/json skips.
func jsonName(f reflect.StructField) (string, reflect.Type) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", nil
	}
	name, _, _ := strings.Cut(tag, ",")
	if t := f.Type; f.Anonymous && name == "" {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			return "", t
		}
	}
	if !f.IsExported() {
		return "", nil
	}
	if name == "" {
		name = f.Name
	}
	return name, nil
}

// keep returns data, a JSON value decoded into shape s, without the members of its struct
// objects whose key is no field's name (nor, at the top, tag), and whether it dropped any. It
// copies nothing until the first member it drops or changes; from there it writes out the
// members it keeps, compactly.
func (s *shape) keep(data []byte, tag string) ([]byte, bool) {
	if !s.nests(data) {
		return data, false
	}
	var out []byte // nil until a member is dropped or changed; then data[:end] starts it
	end, n := 1, 0 // past the last member kept as it was while out is nil; members kept
	eachChild(data, func(key, value []byte, valueEnd int) {
		child, ok := s.child(key, tag)
		kept, changed := child.keep(value, "")
		if out == nil && ok && !changed {
			end, n = valueEnd, n+1
			return
		}
		if out == nil {
			out = append(make([]byte, 0, len(data)), data[:end]...)
		}
		if !ok {
			return
		}
		if n++; n > 1 {
			out = append(out, ',')
		}
		if key != nil {
			out = append(append(out, key...), ':')
		}
		out = append(out, kept...)
	})
	if out == nil {
		return data, false
	}
	return append(out, data[len(data)-1]), true
}

// nests reports whether data is an object or array whose children s has shapes for.
func (s *shape) nests(data []byte) bool {
	if s == nil || len(data) == 0 {
		return false
	}
	switch data[0] {
	case '{':
		return s.kind == reflect.Struct || s.kind == reflect.Map
	case '[':
		return s.kind == reflect.Slice
	}
	return false
}

// child returns the shape of the member with the quoted key (nil for an element), and whether
// the member binds: a map's members and an array's elements always do, a struct's only by a
// field's exact name or tag.
func (s *shape) child(key []byte, tag string) (*shape, bool) {
	if s.kind != reflect.Struct {
		return s.elem, true
	}
	name := key[1 : len(key)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var unquoted string
		if json.Unmarshal(key, &unquoted) != nil {
			return nil, false
		}
		name = []byte(unquoted)
	}
	child, ok := s.fields[string(name)]
	return child, ok || (tag != "" && string(name) == tag)
}
