package problem

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCodeOf(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		err  error
		want Code
	}{
		{"Problem", Invalidf("name", "is empty"), Invalid},
		{"WrappedProblem", fmt.Errorf("create group: %w", Unprocessablef("jobs", "cycle")), Unprocessable},
		{"NotFoundSentinel", fmt.Errorf("get group 7: %w", ErrNotFound), NotFound},
		{"ConflictSentinel", ErrConflict, Conflict},
		{"Internal", errors.New("connection reset"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, CodeOf(tt.err))
		})
	}
}

func TestErrorMessageNamesField(t *testing.T) {
	t.Parallel()

	require.Equal(t, "invalid: target: is required", Invalidf("target", "is required").Error())
}
