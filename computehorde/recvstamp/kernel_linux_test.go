//go:build linux

package recvstamp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKernelStamp(t *testing.T) {
	t.Parallel()

	t.Run("IsArrivalNotTheLateRead", func(t *testing.T) {
		t.Parallel()
		stop, err := KeepStamping(t.Context(), 5*time.Second)
		require.NoError(t, err)
		defer stop()
		client, c := tcpPair(t)

		before := time.Now()
		_, err = client.Write([]byte("frame"))
		require.NoError(t, err)
		wrote := time.Now()
		const late = 50 * time.Millisecond
		time.Sleep(late) // the frame waits in the socket: the reader reads it this late
		reading := time.Now()
		_, err = c.Read(make([]byte, 16))
		require.NoError(t, err)
		require.True(t, c.LastReadKernel())
		require.WithinRange(t, c.LastRead(), before, reading,
			"the instant the data arrived (written by %v), not when the reader got to it (%v)", wrote.Sub(before), reading.Sub(before))
		require.Contains(t, c.LastRead().String(), " m=", "carries a monotonic reading")
	})
}

func TestReceivedAt(t *testing.T) {
	t.Parallel()

	now := time.Now()
	opened := now.Add(-time.Second)
	wall := now.Round(0) // what the kernel stamps: a wall clock reading, no monotonic one
	tests := []struct {
		name  string
		stamp time.Time
		want  time.Duration // of the result after now
	}{
		{name: "EarlierStampIsMovedBackFromNow", stamp: wall.Add(-3 * time.Millisecond), want: -3 * time.Millisecond},
		{name: "StampAtNowIsNow", stamp: wall, want: 0},
		{name: "StampAfterNowIsNow", stamp: wall.Add(time.Millisecond), want: 0},
		{name: "StampBeforeOpenedIsOpened", stamp: wall.Add(-time.Hour), want: -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at := receivedAt(tt.stamp, now, opened)
			require.Equal(t, tt.want, at.Sub(now))
			require.Contains(t, at.String(), " m=", "carries a monotonic reading")
			require.Equal(t, now.UnixNano()+int64(tt.want), at.UnixNano(), "and the wall clock of the stamp")
		})
	}
}
