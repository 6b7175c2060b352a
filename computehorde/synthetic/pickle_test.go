package synthetic

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
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

// parseTestPickle reads back the dicts appendPickle writes, so Go tests can walk a payload
// without Python; lists of strings become []string and lists of ints []int.
func parseTestPickle(t *testing.T, data []byte) map[string]any {
	t.Helper()
	require.True(t, bytes.HasPrefix(data, []byte("\x80\x02}(")), "protocol 2 dict")
	require.True(t, bytes.HasSuffix(data, []byte("u.")), "one SETITEMS then STOP")
	r := bytes.NewReader(data[4 : len(data)-2])
	var stack []any
	for r.Len() > 0 {
		op, _ := r.ReadByte()
		switch op {
		case pickleBinUnicode:
			var n uint32
			require.NoError(t, binary.Read(r, binary.LittleEndian, &n))
			s := make([]byte, n)
			_, err := io.ReadFull(r, s)
			require.NoError(t, err)
			stack = append(stack, string(s))
		case pickleBinInt1:
			b, err := r.ReadByte()
			require.NoError(t, err)
			stack = append(stack, int(b))
		case pickleBinInt:
			var n int32
			require.NoError(t, binary.Read(r, binary.LittleEndian, &n))
			stack = append(stack, int(n))
		case pickleEmptyList:
			// The list's items follow between MARK and APPENDS.
		case pickleMark:
			stack = append(stack, testMark{})
		case pickleAppends:
			start := slices.Index(stack, any(testMark{}))
			require.GreaterOrEqual(t, start, 0, "APPENDS without MARK")
			stack = append(stack[:start], testList(stack[start+1:]))
		default:
			t.Fatalf("unexpected opcode %q", op)
		}
	}
	require.Zero(t, len(stack)%2, "keys and values pair up")
	dict := make(map[string]any)
	for i := 0; i < len(stack); i += 2 {
		dict[stack[i].(string)] = stack[i+1]
	}
	return dict
}

// testMark stands for a pickle MARK on parseTestPickle's stack.
type testMark struct{}

// testList turns the items of a pickled list into []string or []int, whichever they are.
func testList(items []any) any {
	if len(items) > 0 {
		if _, ok := items[0].(string); ok {
			strs := make([]string, len(items))
			for i, item := range items {
				strs[i] = item.(string)
			}
			return strs
		}
	}
	ints := make([]int, len(items))
	for i, item := range items {
		ints[i] = item.(int)
	}
	return ints
}
