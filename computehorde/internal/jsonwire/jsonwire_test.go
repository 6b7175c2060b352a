package jsonwire

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	t.Parallel()

	out, err := Marshal([]string{"<miner_hotkey>-<48 random chars>", "a&b"})
	require.NoError(t, err)
	require.JSONEq(t, `["<miner_hotkey>-<48 random chars>","a&b"]`, string(out))
	require.Equal(t, `["<miner_hotkey>-<48 random chars>","a&b"]`, string(out))
}

func TestMarshalTagged(t *testing.T) {
	t.Parallel()

	type body struct {
		URL *string `json:"url"`
	}
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{name: "Fields", value: body{}, want: `{"kind":"x","url":null}`},
		{name: "Empty", value: struct{}{}, want: `{"kind":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			out, err := MarshalTagged("kind", "x", tt.value)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
		})
	}

	_, err := MarshalTagged("kind", "x", []int{1})
	require.Error(t, err)
}

func TestRequire(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		data    string
		missing bool
		null    bool
		typeErr bool
	}{
		{name: "Present", data: `{"a":1,"b":"x"}`},
		{name: "Missing", data: `{"a":1}`, missing: true},
		{name: "Null", data: `{"a":1,"b":null}`, null: true},
		{name: "NotObject", data: `[1]`, typeErr: true},
		{name: "NullObject", data: `null`, typeErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := Require([]byte(tt.data), "a", "b")
			var fieldErr *FieldError
			var typeErr *json.UnmarshalTypeError
			switch {
			case tt.missing:
				require.ErrorAs(t, err, &fieldErr)
				require.True(t, fieldErr.Missing)
				require.Equal(t, "b", fieldErr.Field)
			case tt.null:
				require.ErrorAs(t, err, &fieldErr)
				require.False(t, fieldErr.Missing)
			case tt.typeErr:
				require.ErrorAs(t, err, &typeErr)
			default:
				require.NoError(t, err)
			}
		})
	}
}

func TestParseObject(t *testing.T) {
	t.Parallel()

	t.Run("Object", func(t *testing.T) {
		t.Parallel()
		o, err := ParseObject([]byte(` {"a":"x","b":{"c":[1,"}"]},"a":"y"}`))
		require.NoError(t, err)
		v, ok := o.Lookup("a")
		require.True(t, ok)
		require.Equal(t, `"y"`, string(v), "the last of duplicate keys wins, as in encoding/json")
		v, ok = o.Lookup("b")
		require.True(t, ok)
		require.Equal(t, `{"c":[1,"}"]}`, string(v)) //nolint:testifylint // the raw bytes Lookup returns are the point
		_, ok = o.Lookup("c")
		require.False(t, ok, "members of nested objects are not the object's")
		require.NoError(t, o.Require("a", "b"))
		var fieldErr *FieldError
		require.ErrorAs(t, o.Require("a", "z"), &fieldErr)
		require.Equal(t, "z", fieldErr.Field)
	})

	// The errors are those json.Unmarshal gives for the same text.
	for name, data := range map[string]string{
		"Truncated": `{"a":1`, "Empty": ``, "Array": `[1]`, "Null": `null`, "String": `"x"`, "TrailingComma": `{"a":1,}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseObject([]byte(data))
			require.Error(t, err)
			var syntaxErr *json.SyntaxError
			var typeErr *json.UnmarshalTypeError
			require.True(t, errors.As(err, &syntaxErr) || errors.As(err, &typeErr), "%T %v", err, err)
			var object struct{}
			if want := json.Unmarshal([]byte(data), &object); want != nil {
				require.Equal(t, want.Error(), err.Error())
			}
		})
	}
}
