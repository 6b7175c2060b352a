package synthetic

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendPickle(t *testing.T) {
	t.Parallel()

	t.Run("writes protocol 2 opcodes", func(t *testing.T) {
		t.Parallel()
		got, err := appendPickle(nil, []pickleItem{{Key: "n", Value: 3}, {Key: "l", Value: []string{"ab"}}})
		require.NoError(t, err)
		want := "\x80\x02}(" + "X\x01\x00\x00\x00nK\x03" + "X\x01\x00\x00\x00l](X\x02\x00\x00\x00abe" + "u."
		require.Equal(t, want, string(got))
	})

	tests := []struct {
		name  string
		value any
		want  string
	}{
		{name: "byte-sized int", value: 255, want: "K\xff"},
		{name: "int above a byte", value: 256, want: "J\x00\x01\x00\x00"},
		{name: "negative int", value: -1, want: "J\xff\xff\xff\xff"},
		{name: "empty list", value: []int{}, want: "](e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := appendPickleValue(nil, tt.value)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}

	t.Run("rejects what it cannot write", func(t *testing.T) {
		t.Parallel()
		_, err := appendPickle(nil, []pickleItem{{Key: "f", Value: 1.5}})
		require.ErrorContains(t, err, `pickle "f": unsupported type float64`)
		_, err = appendPickle(nil, []pickleItem{{Key: "big", Value: []int{1 << 40}}})
		require.ErrorContains(t, err, "outside int32")
	})
}

// pickleDumpPy loads a pickle from stdin and prints it as JSON with the Python type of every
// value, so the test sees str versus bytes and dict order, which JSON alone would blur.
const pickleDumpPy = `
import json, pickle, sys
def typed(v):
    if isinstance(v, list):
        return ["list", [typed(x) for x in v]]
    return [type(v).__name__, v]
obj = pickle.loads(sys.stdin.buffer.read())
assert type(obj) is dict
print(json.dumps([[k, typed(v)] for k, v in obj.items()]))
`

func TestAppendPicklePython(t *testing.T) {
	t.Parallel()

	lookPython(t)
	got, err := appendPickle(nil, []pickleItem{
		{Key: "n", Value: 3},
		{Key: "payloads", Value: []string{"gAAAAA==", "", strings.Repeat("z", 300)}},
		{Key: "unicode", Value: "pâté ✓"},
		{Key: "ints", Value: []int{0, 255, 256, -7, 1 << 30}},
	})
	require.NoError(t, err)

	out := runPython(t, pickleDumpPy, got)
	want := `[["n", ["int", 3]],
		["payloads", ["list", [["str", "gAAAAA=="], ["str", ""], ["str", "` + strings.Repeat("z", 300) + `"]]]],
		["unicode", ["str", "pâté ✓"]],
		["ints", ["list", [["int", 0], ["int", 255], ["int", 256], ["int", -7], ["int", 1073741824]]]]]`
	require.JSONEq(t, want, out)
}
