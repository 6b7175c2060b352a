package populate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTruncateMessage(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name string
		in   string
		want int
	}{
		{"Short", "ValueError: nope", 16},
		{"Exact", strings.Repeat("x", 2047), 2047},
		{"Long", strings.Repeat("x", 2147), 2047},
		{"LongMultibyte", strings.Repeat("é", 3000), 2047},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := truncateMessage(tc.in)
			require.Equal(t, tc.want, utf8.RuneCountInString(got))
			if utf8.RuneCountInString(tc.in) > MaxErrorMessage {
				require.True(t, strings.HasSuffix(got, "...truncated"))
			} else {
				require.Equal(t, tc.in, got)
			}
		})
	}
}

type quotaError struct{ left int }

func (e *quotaError) Error() string { return fmt.Sprintf("quota exhausted (%d left)", e.left) }

func TestDescribe(t *testing.T) {
	t.Parallel()

	t.Run("MakeErrorKeepsItsClassAndStack", func(t *testing.T) {
		t.Parallel()
		msg, stack := describe(fmt.Errorf("wrapped: %w", &MakeError{Class: "ValueError", Message: "bad", Stack: "s"}))
		require.Equal(t, "ValueError: bad", msg)
		require.Equal(t, "s", stack)
	})
	t.Run("GoErrorNamesTheInnermostType", func(t *testing.T) {
		t.Parallel()
		msg, stack := describe(fmt.Errorf("make key 3: %w", &quotaError{left: 0}))
		require.Equal(t, "populate.quotaError: make key 3: quota exhausted (0 left)", msg)
		require.Contains(t, stack, "*populate.quotaError")
	})
	t.Run("NulAndInvalidUTF8AreStorable", func(t *testing.T) {
		t.Parallel()
		msg, _ := describe(errors.New("a\x00b\xffc"))
		require.True(t, utf8.ValidString(msg))
		require.NotContains(t, msg, "\x00")
	})
}
