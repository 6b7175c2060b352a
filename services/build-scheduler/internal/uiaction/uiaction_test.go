package uiaction

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

func TestRetried(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		job  rivertype.JobRow
		want bool
	}{
		"FirstDelivery":               {rivertype.JobRow{Attempt: 1, CreatedAt: created, ScheduledAt: created, Metadata: []byte(`{}`)}, false},
		"PeriodicFirstDelivery":       {rivertype.JobRow{Attempt: 1, CreatedAt: created, ScheduledAt: created.Add(-time.Millisecond), Metadata: []byte(`{"periodic": true}`)}, false},
		"EndedWithOutput":             {rivertype.JobRow{Attempt: 2, CreatedAt: created, ScheduledAt: created.Add(time.Hour), Metadata: []byte(`{"output": {"applied": true}}`)}, true},
		"OutputCleared":               {rivertype.JobRow{Attempt: 2, CreatedAt: created, ScheduledAt: created.Add(time.Second), Metadata: []byte(`{"output": null}`), Errors: []rivertype.AttemptError{{Error: "boom"}}}, false},
		"RescuedOrErrored":            {rivertype.JobRow{Attempt: 2, CreatedAt: created, ScheduledAt: created.Add(time.Minute), Metadata: []byte(`{}`), Errors: []rivertype.AttemptError{{Error: "Stuck job rescued by JobRescuer"}}}, false},
		"CancelledWaitingThenRetried": {rivertype.JobRow{Attempt: 1, AttemptedBy: []string{"w1"}, CreatedAt: created, ScheduledAt: created.Add(time.Minute), Metadata: []byte(`{}`)}, true},
		"InterruptedByAShutdown":      {rivertype.JobRow{Attempt: 1, AttemptedBy: []string{"w1", "w2"}, CreatedAt: created, ScheduledAt: created.Add(time.Minute), Metadata: []byte(`{}`)}, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Retried(&tt.job))
		})
	}
}
