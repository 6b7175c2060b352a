package receipts

import (
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pyJSONCases pairs values with what Python's json.dumps(value, sort_keys=True) prints for them.
var pyJSONCases = []struct {
	name  string
	value any
	want  string
}{
	{name: "ASCII", value: "plain text", want: `"plain text"`},
	{name: "Escapes", value: "q\"b\\n\nr\rt\tb\bf\f", want: `"q\"b\\n\nr\rt\tb\bf\f"`},
	{name: "Control", value: "\x00\x1f\x7f", want: `"\u0000\u001f\u007f"`},
	{name: "Latin", value: "Zürich", want: `"Z\u00fcrich"`},
	{name: "CJK", value: "検証者", want: `"\u691c\u8a3c\u8005"`},
	{name: "Astral", value: "🚀x", want: `"\ud83d\ude80x"`},
	{name: "HTML", value: "<a&b>", want: `"<a&b>"`},
	{name: "Bool", value: true, want: `true`},
	{name: "Null", value: nil, want: `null`},
	{name: "Int", value: -42, want: `-42`},
	{name: "IntList", value: []int64{1, 2, 3}, want: `[1, 2, 3]`},
	{name: "EmptyList", value: []int64{}, want: `[]`},
	{name: "FloatOne", value: 1.0, want: `1.0`},
	{name: "FloatHalf", value: 0.5, want: `0.5`},
	{name: "FloatThird", value: 1.0 / 3, want: `0.3333333333333333`},
	{name: "FloatSmall", value: 0.0001, want: `0.0001`},
	{name: "FloatTiny", value: 0.00001, want: `1e-05`},
	{name: "FloatBig", value: 1e15, want: `1000000000000000.0`},
	{name: "FloatHuge", value: 1e16, want: `1e+16`},
	{name: "FloatHugeFraction", value: 1.5e17, want: `1.5e+17`},
	{name: "FloatNegativeZero", value: math.Copysign(0, -1), want: `-0.0`},
	{name: "FloatNaN", value: math.NaN(), want: `NaN`},
	{name: "FloatInf", value: math.Inf(-1), want: `-Infinity`},
	{
		name:  "SortedObject",
		value: pyObject{"b": 1, "a": pyObject{"é": "x", "z": nil}, "A": false},
		want:  `{"A": false, "a": {"z": null, "\u00e9": "x"}, "b": 1}`,
	},
}

func TestAppendPyJSON(t *testing.T) {
	t.Parallel()

	for _, tt := range pyJSONCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, string(appendPyJSON(nil, tt.value)))
		})
	}
}

// TestAppendPyJSONAgainstPython checks the static goldens above against the real thing, so they
// cannot drift from Python. It skips where python3 is not installed.
func TestAppendPyJSONAgainstPython(t *testing.T) {
	t.Parallel()

	var inputs []string
	var wants []string
	for _, tt := range pyJSONCases {
		inputs = append(inputs, tt.want) // each golden is also valid input for json.loads
		wants = append(wants, tt.want)
	}
	got := runPython(t, `
import json, sys
for line in json.load(sys.stdin):
    print(json.dumps(json.loads(line), sort_keys=True))
`, inputs)
	require.Equal(t, wants, got)
}

// runPython feeds inputs as a JSON list to a python3 script and returns its output lines.
func runPython(t *testing.T, script string, inputs []string) []string {
	t.Helper()

	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	stdin, err := json.Marshal(inputs)
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), python, "-c", script)
	cmd.Stdin = strings.NewReader(string(stdin))
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}
