package queue

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// TestRetriedInUI holds the rule RetriedInUI reads from a job's attempts and errors.
func TestRetriedInUI(t *testing.T) {
	t.Parallel()
	failed := func(msgs ...string) []rivertype.AttemptError {
		out := make([]rivertype.AttemptError, len(msgs))
		for i, m := range msgs {
			out[i] = rivertype.AttemptError{Attempt: i + 1, At: time.Now(), Error: m}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		attempt int
		errors  []rivertype.AttemptError
		want    bool
	}{
		{"FirstAttempt", 1, nil, false},
		{"RiversRetryOfAnError", 2, failed("boom"), false},
		{"RescuedFromADeadProcess", 3, failed("boom", "Stuck job rescued by JobRescuer"), false},
		{"RetryOfACompletedJob", 2, nil, true},
		{"RetryOfAJobCompletedAfterAnError", 3, failed("boom"), true},
		{"RetryOfAJobCancelledWhileRunning", 2, failed(CancelledInUI + ": context canceled"), true},
		{"RetryOfAJobRiverCancelled", 2, failed(river.ErrJobCancelledRemotely.Error()), true},
		{"RetryOfAJobThatFailedForGood", 3, failed("boom", "boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, RetriedInUI(&rivertype.JobRow{Attempt: tc.attempt, Errors: tc.errors}))
		})
	}
}

// TestCancelledRemotely tells River UI's Cancel of a running job from the other ends of a job's
// context: its client's shutdown, or none at all.
func TestCancelledRemotely(t *testing.T) {
	t.Parallel()
	remote, cancel := context.WithCancelCause(context.Background())
	cancel(river.ErrJobCancelledRemotely)
	require.True(t, CancelledRemotely(remote))
	shutdown, stop := context.WithCancel(context.Background())
	stop()
	require.False(t, CancelledRemotely(shutdown))
	require.False(t, CancelledRemotely(context.Background()))
}
