// Package jsonwire holds the JSON mechanics the ComputeHorde wire types share: encoding without
// HTML escaping (upstream pydantic writes "<" as is), splicing a discriminator in front of an
// object, and required-field checks that encoding/json lacks.
package jsonwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// objectType names the Go type a JSON object decodes into, for type errors.
var objectType = reflect.TypeFor[map[string]any]()

// Marshal encodes v compactly without escaping <, > and &, so text such as
// "<miner_hotkey>" reads the same as upstream sends it.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalTagged encodes v, an object, with key:value as its first member, the way upstream
// places message_type, volume_type and output_upload_type first.
func MarshalTagged(key, value string, v any) ([]byte, error) {
	body, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("tag %s=%s: %T does not encode as an object", key, value, v)
	}
	out := make([]byte, 0, len(key)+len(value)+len(body)+8)
	out = fmt.Appendf(out, "{%q:%q", key, value)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// FieldError reports a required field that is absent, or null where null is not allowed.
type FieldError struct {
	Field   string
	Missing bool // false: present but null
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Missing {
		return fmt.Sprintf("missing required field %q", e.Field)
	}
	return fmt.Sprintf("field %q must not be null", e.Field)
}

// ValueError reports a field whose JSON type is right but whose value is not allowed, such as an
// unknown volume_type.
type ValueError struct {
	Field string
	Value string
}

// Error implements error.
func (e *ValueError) Error() string {
	return fmt.Sprintf("field %q: invalid value %q", e.Field, e.Value)
}

// Object is JSON text already checked to be an object, so that several lookups and checks of
// one frame validate it once rather than once each.
type Object []byte

// ParseObject checks that data is a JSON object. It reports a non-object as
// *json.UnmarshalTypeError and bad JSON as *json.SyntaxError, like encoding/json would.
func ParseObject(data []byte) (Object, error) {
	if err := checkObject(data); err != nil {
		return nil, err
	}
	return Object(data), nil
}

// Require checks that data is a JSON object holding each named field with a non-null value,
// with the errors of ParseObject and Object.Require.
func Require(data []byte, names ...string) error {
	o, err := ParseObject(data)
	if err != nil {
		return err
	}
	return o.Require(names...)
}

// Require checks that the object holds each named field with a non-null value.
func (o Object) Require(names ...string) error {
	data := []byte(o)
	const maxNames = 64
	if len(names) > maxNames {
		panic("jsonwire: too many required names") // a programming error: callers list a few
	}
	var present, null uint64
	eachChild(data, func(key, value []byte, _ int) {
		for i, name := range names {
			if keyEquals(key, name) {
				present |= 1 << i
				null &^= 1 << i
				if IsNull(value) {
					null |= 1 << i
				}
			}
		}
	})
	for i, name := range names {
		if present&(1<<i) == 0 {
			return &FieldError{Field: name, Missing: true}
		}
		if null&(1<<i) != 0 {
			return &FieldError{Field: name}
		}
	}
	return nil
}

// Lookup returns the raw value of an object's member, a subslice of data, and whether it is
// present; with duplicate keys the last wins, as in encoding/json. It allocates nothing for
// keys without escapes, so checking a frame's fields costs a scan, not a copy of the frame.
func Lookup(data []byte, name string) (json.RawMessage, bool, error) {
	o, err := ParseObject(data)
	if err != nil {
		return nil, false, err
	}
	found, ok := o.Lookup(name)
	return found, ok, nil
}

// Lookup returns the raw value of the object's member name, a subslice of the object, and
// whether it is present, as the package's Lookup does.
func (o Object) Lookup(name string) (json.RawMessage, bool) {
	var found json.RawMessage
	ok := false
	eachChild(o, func(key, value []byte, _ int) {
		if keyEquals(key, name) {
			found, ok = value, true
		}
	})
	return found, ok
}

// checkObject reports invalid JSON or a non-object the way json.Unmarshal does, without
// allocating for the contents. A valid object, the common case, costs one json.Valid scan;
// anything else goes through json.Unmarshal for the error it would give.
func checkObject(data []byte) error {
	if json.Valid(data) && data[skipSpace(data, 0)] == '{' {
		return nil
	}
	var object struct{}
	if err := json.Unmarshal(data, &object); err != nil {
		return err
	}
	if first := skipSpace(data, 0); data[first] != '{' {
		return &json.UnmarshalTypeError{Value: "null", Type: objectType}
	}
	return nil
}

// keyEquals compares a quoted JSON key with name, unquoting only keys with escapes.
func keyEquals(quoted []byte, name string) bool {
	if !bytes.ContainsRune(quoted, '\\') {
		return string(quoted[1:len(quoted)-1]) == name
	}
	var key string
	return json.Unmarshal(quoted, &key) == nil && key == name
}

// IsNull reports whether raw is the JSON literal null (or empty, as an absent RawMessage is).
func IsNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
