package yamljson

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestToJSON(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		in, want string
	}{
		"JSONAsWritten": {`{"n": 9223372036854775808, "x": 1e2}`, `{"n": 9223372036854775808, "x": 1e2}`},
		"YAMLMapping":   {"name: g\njobs:\n  - {name: a, command: [sh, -c, 'echo a']}\n", `{"jobs":[{"command":["sh","-c","echo a"],"name":"a"}],"name":"g"}`},
		"YAMLNumbers":   {"timeout_seconds: 60\npriority: -3\nok: true\n", `{"ok":true,"priority":-3,"timeout_seconds":60}`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ToJSON([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestToJSONRefusesWhatIsNeither(t *testing.T) {
	t.Parallel()

	for name, in := range map[string]string{
		"BadYAML":        "jobs: [a, b\n",
		"NonStringKeys":  "1: one\n2: two\n",
		"TabIndentation": "name: g\n\tjobs: []\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ToJSON([]byte(in))
			require.Error(t, err)
		})
	}
}
