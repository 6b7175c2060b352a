package jsonwire

import (
	"encoding/json"
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
