package dag

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIntegerDecodesOutOfRangeToABoundAndRefusesNonIntegers(t *testing.T) {
	t.Parallel()

	tests := []struct {
		lit  string
		want Integer
		ok   bool
	}{
		{"0", 0, true}, {"-1", -1, true}, {"null", 7, true}, // null leaves the value alone
		{"2147483648", 1 << 31, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", math.MaxInt64, true},
		{"-9223372036854775809", math.MinInt64, true},
		{"1e309", math.MaxInt64, true}, {"-1e309", math.MinInt64, true}, {"1e19", math.MaxInt64, true},
		{"1.5", 0, false}, {"1e2", 0, false}, {"-0.0", 0, false}, {`"1"`, 0, false}, {"true", 0, false}, {"[1]", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			t.Parallel()
			n := Integer(7)
			err := json.Unmarshal([]byte(tt.lit), &n)
			if !tt.ok {
				var typeErr *json.UnmarshalTypeError
				require.ErrorAs(t, err, &typeErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, n)
		})
	}
}

func TestOutOfRangeNumbersAreRefusedWithTheJobsIndex(t *testing.T) {
	t.Parallel()

	for _, lit := range []string{"9223372036854775808", "1e309", "-1e309"} {
		var sub Submission
		body := `{"name": "g", "jobs": [{"name": "a", "target": "l", "command": ["true"]},
			{"name": "b", "target": "l", "command": ["true"], "priority": ` + lit + `, "timeout_seconds": ` + lit + `}]}`
		require.NoError(t, json.Unmarshal([]byte(body), &sub))
		_, err := Validate(sub, DefaultLimits)
		require.ErrorContains(t, err, "jobs[1].", lit)
	}
}
