package protocol

import (
	"encoding/json"
	"reflect"

	"drover.dev/computehorde/internal/jsonwire"
)

var stringType = reflect.TypeFor[string]()

// List is a list field upstream defaults to []: a nil List encodes as [] rather than null.
// A []T converts to it implicitly.
type List[T any] []T

// MarshalJSON encodes nil as [].
func (l List[T]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return jsonwire.Marshal([]T(l))
}

// StringMap is a dict[str, str] field upstream defaults to {}: a nil StringMap encodes as {}.
// Keys encode sorted; the order carries no meaning. The form_fields of the post uploads are
// StringMaps too but default to null upstream; their MarshalJSON writes nil as null.
type StringMap map[string]string

// MarshalJSON encodes nil as {}.
func (m StringMap) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	return jsonwire.Marshal(map[string]string(m))
}

// Object is a free-form JSON object (a context or machine specs), kept as the bytes received.
// A nil Object encodes as null.
type Object json.RawMessage

// MarshalJSON writes the object, or null when it is nil.
func (o Object) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	return json.RawMessage(o).MarshalJSON()
}

// UnmarshalJSON accepts a JSON object, or null which leaves the Object nil.
func (o *Object) UnmarshalJSON(data []byte) error {
	switch jsonKind(data) {
	case "null":
		*o = nil
	case "object":
		*o = append((*o)[:0], data...)
	default:
		return &json.UnmarshalTypeError{Value: jsonKind(data), Type: reflect.TypeFor[Object]()}
	}
	return nil
}

// Patterns is HuggingfaceVolume.allow_patterns: null, one pattern or a list. A single pattern
// reads as a one-element list and so re-encodes as a list, which upstream accepts alike.
type Patterns []string

// UnmarshalJSON accepts a string or a list of strings.
func (p *Patterns) UnmarshalJSON(data []byte) error {
	if jsonKind(data) == "string" {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*p = Patterns{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return err
	}
	*p = list
	return nil
}
