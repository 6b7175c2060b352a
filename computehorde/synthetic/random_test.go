package synthetic

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// seeded returns a deterministic stream of random bytes for reproducible tests.
func seeded(seed byte) io.Reader {
	return rand.NewChaCha8([32]byte{seed})
}

func TestRandomSourceAppendString(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		input    []byte
		alphabet string
		n        int
		want     string
	}{
		{name: "maps byte modulo alphabet", input: []byte{0, 1, 61, 62, 63}, alphabet: alphanumeric, n: 5, want: "ab9ab"},
		{name: "rejects bytes at or above 248", input: []byte{248, 255, 123, 7}, alphabet: alphanumeric, n: 2, want: "9h"},
		{name: "rejects bytes at or above 250 for digits", input: []byte{250, 249}, alphabet: digits, n: 1, want: "9"},
		{name: "zero characters", input: nil, alphabet: digits, n: 0, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := newRandomSource(bytes.NewReader(tt.input), 16)
			got, err := src.appendString(nil, tt.alphabet, tt.n)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}

	t.Run("reports exhausted randomness", func(t *testing.T) {
		t.Parallel()
		src := newRandomSource(bytes.NewReader([]byte{255, 255}), 16)
		_, err := src.appendString(nil, alphanumeric, 1)
		require.ErrorIs(t, err, io.EOF)
	})

	t.Run("draws every character about equally often", func(t *testing.T) {
		t.Parallel()
		src := newRandomSource(seeded(1), 4096)
		const perChar = 2000
		got, err := src.appendString(nil, alphanumeric, perChar*len(alphanumeric))
		require.NoError(t, err)
		for _, c := range alphanumeric {
			count := strings.Count(string(got), string(c))
			require.InDelta(t, perChar, count, perChar/5, "character %q", c)
		}
	})
}

func TestRandomSourceUint64n(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		input []byte
		n     uint64
		want  uint64
	}{
		{name: "reduces modulo n", input: []byte{0, 0, 0, 0, 0, 0, 0, 7}, n: 5, want: 2},
		{name: "rejects the biased top value", input: append(bytes.Repeat([]byte{0xff}, 8), 0, 0, 0, 0, 0, 0, 0, 4), n: 3, want: 1},
		{name: "accepts the largest unbiased value", input: append(bytes.Repeat([]byte{0xff}, 7), 0xfe), n: 3, want: 2},
		{name: "power of two keeps every value", input: bytes.Repeat([]byte{0xff}, 8), n: 1 << 15, want: 1<<15 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newRandomSource(bytes.NewReader(tt.input), 16).uint64n(tt.n)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
