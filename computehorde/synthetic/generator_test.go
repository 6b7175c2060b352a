package synthetic

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJobVerify(t *testing.T) {
	t.Parallel()

	const answer = "kJ3x-_Q9Zb1y2W8aH0sVnC4mRtLpE7uYdF5gIiKoXjA="
	tests := []struct {
		name   string
		answer string
		stdout string
		want   bool
	}{
		{name: "exact", answer: answer, stdout: answer, want: true},
		{name: "trailing newline", answer: answer, stdout: answer + "\n", want: true},
		{name: "surrounding whitespace", answer: answer, stdout: " \t\r\n" + answer + " \n", want: true},
		{name: "python-only whitespace", answer: answer, stdout: "\x1c" + answer + "\x1f", want: true},
		{name: "unicode whitespace", answer: answer, stdout: "\u00a0" + answer + "\u3000", want: true},
		{name: "other answer", answer: answer, stdout: "kJ3x-_Q9Zb1y2W8aH0sVnC4mRtLpE7uYdF5gIiKoXjB=", want: false},
		{name: "prefix", answer: answer, stdout: answer[:len(answer)-1], want: false},
		{name: "extra output", answer: answer, stdout: "cracking...\n" + answer, want: false},
		{name: "inner whitespace", answer: "12 34", stdout: "1234", want: false},
		{name: "case differs", answer: "abc", stdout: "ABC", want: false},
		{name: "empty stdout", answer: answer, stdout: "", want: false},
		{name: "empty answer never matches", answer: "", stdout: "\n", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := Job{Answer: tt.answer}
			require.Equal(t, tt.want, job.Verify(tt.stdout))
		})
	}
}
