package jsonwire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		data  string
		key   string
		value string
		found bool
	}{
		{name: "Simple", data: `{"a":1,"b":"x"}`, key: "b", value: `"x"`, found: true},
		{name: "Spaces", data: " {\n \"a\" : [1, {\"b\": 2}] ,\t\"b\" : null } ", key: "b", value: `null`, found: true},
		{name: "NestedNotTopLevel", data: `{"a":{"b":1}}`, key: "b"},
		{name: "StringWithBraces", data: `{"a":"}\"{","b":true}`, key: "b", value: `true`, found: true},
		{name: "EscapedKey", data: `{"job\u005fuuid":"u"}`, key: "job_uuid", value: `"u"`, found: true},
		{name: "DuplicateLastWins", data: `{"a":1,"a":2}`, key: "a", value: `2`, found: true},
		{name: "Empty", data: `{}`, key: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			value, found, err := Lookup([]byte(tt.data), tt.key)
			require.NoError(t, err)
			require.Equal(t, tt.found, found)
			require.Equal(t, tt.value, string(value))
		})
	}
}

func TestLookupRejectsNonObjects(t *testing.T) {
	t.Parallel()

	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	for _, data := range []string{`{"a":`, `{"a":1}}`, ``, `nul`} {
		_, _, err := Lookup([]byte(data), "a")
		require.ErrorAs(t, err, &syntaxErr, data)
	}
	for _, data := range []string{`[1]`, `"a"`, `null`, `1`} {
		_, _, err := Lookup([]byte(data), "a")
		require.ErrorAs(t, err, &typeErr, data)
	}
}
