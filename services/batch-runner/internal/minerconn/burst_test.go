package minerconn

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// reader is a peer that sends every message it reads to got, and keeps the connection open until
// the test ends.
func reader(t *testing.T, got chan<- string) string {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return peer(t, func(ws *websocket.Conn) {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			select {
			case got <- string(data):
			case <-release:
				return
			}
		}
	})
}

func TestBurst(t *testing.T) {
	t.Parallel()

	t.Run("WritesEveryParkedConnectionOnceTheGateOpens", func(t *testing.T) {
		t.Parallel()
		const conns = 5
		got := make(chan string, 3*conns)
		var burst Burst
		gate := make(chan struct{})
		armed, res := make(chan struct{}, conns), make(chan SendResult, conns)
		long := strings.Repeat("x", 70000)
		for range conns {
			c, err := Dial(context.Background(), reader(t, got), newRecorder(), Options{})
			require.NoError(t, err)
			defer c.Close()
			require.NotNil(t, c.raw, "a plain TCP websocket is written by the burst")
			frames := append(append(MaskedFrame([]byte("a")), MaskedFrame([]byte(strings.Repeat("y", 300)))...), MaskedFrame([]byte(long))...)
			c.SendIn(&burst, gate, frames, func() { armed <- struct{}{} }, func(r SendResult) { res <- r })
		}
		for range conns {
			<-armed
		}
		select {
		case <-got:
			t.Fatal("sent before the gate opened")
		case <-time.After(20 * time.Millisecond):
		}
		close(gate)
		burst.Write(0, 2)
		burst.Write(1, 2)
		counts := map[string]int{}
		for range 3 * conns {
			m := <-got
			counts[fmt.Sprintf("%c×%d", m[0], len(m))]++
		}
		require.Equal(t, map[string]int{"a×1": conns, "y×300": conns, "x×70000": conns}, counts)
		for range conns {
			r := <-res
			require.NoError(t, r.Err)
			require.False(t, r.After.Before(r.Before))
		}
	})

	t.Run("ConnectionItsWriterHadNotParkedOnIsWrittenByTheWriter", func(t *testing.T) {
		t.Parallel()
		got := make(chan string, 2)
		c, err := Dial(context.Background(), reader(t, got), newRecorder(), Options{})
		require.NoError(t, err)
		defer c.Close()
		// The writer is busy with an earlier write (parked on another gate) when the burst runs.
		earlier, gate := make(chan struct{}), make(chan struct{})
		c.SendAt(earlier, MaskedFrame([]byte("earlier")), nil, nil)
		var burst Burst
		res := make(chan SendResult, 1)
		c.SendIn(&burst, gate, MaskedFrame([]byte("burst")), nil, func(r SendResult) { res <- r })
		close(gate)
		burst.Write(0, 1)
		close(earlier)
		require.Equal(t, "earlier", <-got)
		require.Equal(t, "burst", <-got, "nothing queued after a write goes before it")
		require.NoError(t, (<-res).Err)
	})

	t.Run("PeerNotReadingGetsTheRestFromItsWriterUnderTheDeadline", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		defer close(release)
		const writeTimeout = 50 * time.Millisecond
		stuck, err := Dial(context.Background(), peer(t, func(*websocket.Conn) { <-release }), newRecorder(), Options{WriteTimeout: writeTimeout})
		require.NoError(t, err)
		defer stuck.Close()
		got := make(chan string, 1)
		healthy, err := Dial(context.Background(), reader(t, got), newRecorder(), Options{WriteTimeout: writeTimeout})
		require.NoError(t, err)
		defer healthy.Close()

		var burst Burst
		gate := make(chan struct{})
		armed := make(chan struct{}, 2)
		stuckRes, healthyRes := make(chan SendResult, 1), make(chan SendResult, 1)
		// 16 MiB cannot fit in the socket buffers of a peer that never reads; the stuck
		// connection comes first in the burst.
		stuck.SendIn(&burst, gate, MaskedFrame(make([]byte, 16<<20)), func() { armed <- struct{}{} }, func(r SendResult) { stuckRes <- r })
		healthy.SendIn(&burst, gate, MaskedFrame([]byte("during")), func() { armed <- struct{}{} }, func(r SendResult) { healthyRes <- r })
		<-armed
		<-armed
		close(gate)
		burst.Write(0, 1) // returns: the stuck connection's write does not block it

		require.NoError(t, (<-healthyRes).Err)
		require.Equal(t, "during", <-got)
		r := <-stuckRes
		require.ErrorIs(t, r.Err, os.ErrDeadlineExceeded)
		require.GreaterOrEqual(t, r.After.Sub(r.Before), writeTimeout, "cut off by the deadline, which starts at Before")
	})
}

func TestBurstWriteThatLandedIsNotFailedByTheClose(t *testing.T) {
	t.Parallel()
	// Peers that hang up as soon as the frame arrives: the reader closes the connection while
	// the writer waits for the burst's result, which must still be the write's.
	const conns = 50
	var burst Burst
	gate := make(chan struct{})
	armed, res := make(chan struct{}, conns), make(chan SendResult, conns)
	for range conns {
		url := peer(t, func(ws *websocket.Conn) { _, _, _ = ws.ReadMessage() })
		c, err := Dial(context.Background(), url, newRecorder(), Options{})
		require.NoError(t, err)
		defer c.Close()
		c.SendIn(&burst, gate, MaskedFrame([]byte("bye")), func() { armed <- struct{}{} }, func(r SendResult) { res <- r })
	}
	for range conns {
		<-armed
	}
	close(gate)
	burst.Write(0, 1)
	for range conns {
		r := <-res
		require.NoError(t, r.Err)
		require.False(t, r.Before.IsZero())
	}
}
