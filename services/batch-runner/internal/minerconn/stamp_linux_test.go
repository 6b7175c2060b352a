//go:build linux

package minerconn

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/protocol"
)

// heldReader records each message's receive instant and holds the reader goroutine inside the
// first message until hold is closed.
type heldReader struct {
	ats  chan time.Time
	hold chan struct{}
	once sync.Once
}

func (h *heldReader) Message(at time.Time, _ protocol.Message) {
	h.ats <- at
	h.once.Do(func() { <-h.hold })
}

func (h *heldReader) BadFrame(time.Time, error) {}
func (h *heldReader) Closed(error)              {}

// keepKernelStamping holds a stamped socket open until the test ends and returns once the
// kernel stamps its packets. Linux stamps received packets machine-wide while any socket asks
// for it, and turns stamping on from a work queue a moment after the first one does; until
// then a fresh connection's packets arrive unstamped and the reader falls back to the instant
// its read returned.
func keepKernelStamping(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	server, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = server.Close() })
	recv := kernelStamped(client)
	require.NotNil(t, recv, "SO_TIMESTAMPNS on a TCP socket")
	buf := make([]byte, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := server.Write([]byte("x"))
		require.NoError(t, err)
		_, _, kernel, err := recv(buf)
		require.NoError(t, err)
		if kernel {
			return
		}
		require.True(t, time.Now().Before(deadline), "the kernel stamped no packet in 5 s")
		time.Sleep(time.Millisecond)
	}
}

func TestReceiveInstant(t *testing.T) {
	t.Parallel()

	t.Run("IsArrivalNotTheLateRead", func(t *testing.T) {
		t.Parallel()
		keepKernelStamping(t)
		const accept = `{"message_type":"V0AcceptJobRequest","job_uuid":"u1"}`
		writeSecond := make(chan struct{})
		wrote := make(chan [2]time.Time, 1)
		url := peer(t, func(ws *websocket.Conn) {
			_ = ws.WriteMessage(websocket.TextMessage, []byte(accept))
			<-writeSecond
			before := time.Now()
			_ = ws.WriteMessage(websocket.TextMessage, []byte(accept))
			wrote <- [2]time.Time{before, time.Now()}
			_, _, _ = ws.ReadMessage()
		})
		h := &heldReader{ats: make(chan time.Time, 2), hold: make(chan struct{})}
		c, err := Dial(context.Background(), url, h, Options{})
		require.NoError(t, err)
		defer c.Close()

		<-h.ats // the reader is now held in the first message
		close(writeSecond)
		w := <-wrote
		const late = 50 * time.Millisecond
		time.Sleep(late) // the second frame waits in the socket: the reader reads it this late
		close(h.hold)
		at := <-h.ats
		require.WithinRange(t, at, w[0], w[1].Add(10*time.Millisecond),
			"the instant the frame arrived, not %v after, when the reader got to it", at.Sub(w[0]))
		require.Contains(t, at.String(), " m=", "carries a monotonic reading")
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
