package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestManifestKeepsOrder(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want Manifest
		out  string
	}{
		{
			name: "Order",
			in:   `{"spin_up-4min.gpu-24gb":3,"always_on.llm.a6000":1}`,
			want: Manifest{{Class: "spin_up-4min.gpu-24gb", Count: 3}, {Class: "always_on.llm.a6000", Count: 1}},
			out:  `{"spin_up-4min.gpu-24gb":3,"always_on.llm.a6000":1}`,
		},
		{
			name: "DuplicateKeepsFirstPlaceLastCount",
			in:   `{"b":1, "a":2, "b":5}`,
			want: Manifest{{Class: "b", Count: 5}, {Class: "a", Count: 2}},
			out:  `{"b":5,"a":2}`,
		},
		{name: "Empty", in: `{}`, want: Manifest{}, out: `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var m Manifest
			require.NoError(t, json.Unmarshal([]byte(tt.in), &m))
			require.Equal(t, tt.want, m)
			out, err := json.Marshal(m)
			require.NoError(t, err)
			require.Equal(t, tt.out, string(out))
		})
	}
}

func TestManifestCounts(t *testing.T) {
	t.Parallel()

	m := Manifest{{Class: "a", Count: 2}, {Class: "b", Count: 0}, {Class: "c", Count: -1}}
	require.Equal(t, map[string]int{"a": 2}, m.Counts())
}

func TestValueTypesEncodeDefaults(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		value any
		want  string
	}{
		{name: "NilList", value: List[string](nil), want: `[]`},
		{name: "List", value: List[string]{"a"}, want: `["a"]`},
		{name: "NilStringMap", value: StringMap(nil), want: `{}`},
		{name: "NilObject", value: Object(nil), want: `null`},
		{name: "Object", value: Object(`{"a": [1, 2]}`), want: `{"a":[1,2]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			out, err := json.Marshal(tt.value)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
		})
	}
}
