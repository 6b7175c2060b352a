package receipts

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFormatTime(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		time time.Time
		want string
	}{
		{name: "Micros", time: time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC), want: "2025-03-01T12:00:00.123456Z"},
		{name: "LeadingZeroMicros", time: time.Date(2025, 3, 1, 12, 0, 0, 1000, time.UTC), want: "2025-03-01T12:00:00.000001Z"},
		{name: "ZeroMicros", time: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), want: "2025-03-01T12:00:00Z"},
		{name: "NanosDropped", time: time.Date(2025, 3, 1, 12, 0, 0, 999, time.UTC), want: "2025-03-01T12:00:00Z"},
		{name: "TrailingZerosKept", time: time.Date(2025, 3, 1, 12, 0, 0, 500000000, time.UTC), want: "2025-03-01T12:00:00.500000Z"},
		{name: "Offset", time: time.Date(2025, 3, 1, 14, 0, 0, 0, time.FixedZone("", 2*3600)), want: "2025-03-01T14:00:00+02:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, FormatTime(tt.time))
		})
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()

	tests := []struct {
		input string
		want  string
	}{
		{input: "2025-03-01T12:00:00.123456Z", want: "2025-03-01T12:00:00.123456Z"},
		{input: "2025-03-01T12:00:00Z", want: "2025-03-01T12:00:00Z"},
		{input: "2025-03-01T12:00:00.5Z", want: "2025-03-01T12:00:00.500000Z"},
		{input: "2025-03-01T12:00:00.123456789Z", want: "2025-03-01T12:00:00.123456Z"},
		{input: "2025-03-01T12:00:00+00:00", want: "2025-03-01T12:00:00Z"},
		{input: "2025-03-01T14:00:00+02:00", want: "2025-03-01T14:00:00+02:00"},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			t.Parallel()

			parsed, err := ParseTime(tt.input)
			require.NoError(t, err)
			require.Equal(t, tt.want, FormatTime(parsed))
		})
	}

	_, err := ParseTime("2025-03-01 12:00:00")
	require.Error(t, err)
}
