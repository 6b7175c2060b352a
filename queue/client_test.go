package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRescueAfterIsNeverRiversHour(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		cfg  ClientConfig
		want time.Duration
	}{
		"Unset":           {ClientConfig{}, time.Minute},
		"JobTimeout":      {ClientConfig{JobTimeout: 5 * time.Minute}, 5 * time.Minute},
		"NoJobTimeout":    {ClientConfig{JobTimeout: -1}, time.Minute},
		"Set":             {ClientConfig{JobTimeout: time.Minute, RescueStuckJobsAfter: 2 * time.Minute}, 2 * time.Minute},
		"SetWithoutLimit": {ClientConfig{RescueStuckJobsAfter: 30 * time.Second}, 30 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, rescueAfter(tt.cfg))
		})
	}
}
