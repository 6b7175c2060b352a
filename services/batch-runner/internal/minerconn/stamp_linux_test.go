//go:build linux

package minerconn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/recvstamp"
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

func TestReceiveInstant(t *testing.T) {
	t.Parallel()

	t.Run("IsArrivalNotTheLateRead", func(t *testing.T) {
		t.Parallel()
		stop, err := recvstamp.KeepStamping(t.Context(), 5*time.Second)
		require.NoError(t, err)
		defer stop()
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
		released := time.Now()
		close(h.hold)
		at := <-h.ats
		require.WithinRange(t, at, w[0], released,
			"the instant the frame arrived (written by %v), not when the reader got to it (%v)", w[1].Sub(w[0]), released.Sub(w[0]))
		require.Contains(t, at.String(), " m=", "carries a monotonic reading")
	})
}
