package minerconn

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/computehorde/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Handler that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	msgs   []protocol.Message
	bad    []error
	closed chan error
}

func newRecorder() *recorder { return &recorder{closed: make(chan error, 1)} }

func (r *recorder) Message(_ time.Time, m protocol.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
}

func (r *recorder) BadFrame(_ time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bad = append(r.bad, err)
}

func (r *recorder) Closed(err error) { r.closed <- err }

func (r *recorder) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs), len(r.bad)
}

// peer is the miner's side: serve runs once per connection with the server socket.
func peer(t *testing.T, serve func(ws *websocket.Conn)) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		serve(ws)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func TestConn(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		rec *recorder
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{rec: newRecorder()}
	}

	t.Run("RawFramesAfterGateReachPeerIntact", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		got := make(chan string, 3)
		url := peer(t, func(ws *websocket.Conn) {
			for range 3 {
				_, data, err := ws.ReadMessage()
				if err != nil {
					return
				}
				got <- string(data)
			}
		})
		c, err := Dial(context.Background(), url, bundle.rec, Options{})
		require.NoError(t, err)
		defer c.Close()
		gate := make(chan struct{})
		long := strings.Repeat("x", 70000)
		frames := append(append(MaskedFrame([]byte("a")), MaskedFrame([]byte(strings.Repeat("y", 300)))...), MaskedFrame([]byte(long))...)
		res := make(chan SendResult, 1)
		c.SendAt(gate, frames, nil, func(r SendResult) { res <- r })
		select {
		case <-got:
			t.Fatal("sent before the gate opened")
		case <-time.After(20 * time.Millisecond):
		}
		close(gate)
		require.Equal(t, "a", <-got)
		require.Len(t, <-got, 300)
		require.Equal(t, long, <-got)
		r := <-res
		require.NoError(t, r.Err)
		require.False(t, r.After.Before(r.Before))
	})

	t.Run("DecodesMessagesAndAnswersMalformedFrames", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		reply := make(chan string, 1)
		url := peer(t, func(ws *websocket.Conn) {
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"message_type":"V0AcceptJobRequest","job_uuid":"u1"}`))
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`PING`))
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`{not json`))
			_, data, err := ws.ReadMessage()
			if err == nil {
				reply <- string(data)
			}
		})
		c, err := Dial(context.Background(), url, bundle.rec, Options{})
		require.NoError(t, err)
		defer c.Close()
		require.Contains(t, <-reply, `"message_type":"GenericError"`)
		msgs, bad := bundle.rec.counts()
		require.Equal(t, 1, msgs)
		require.Equal(t, 1, bad)
	})

	t.Run("OversizedFrameClosesConnection", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		url := peer(t, func(ws *websocket.Conn) {
			_ = ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("z", 5000)))
			_, _, _ = ws.ReadMessage()
		})
		c, err := Dial(context.Background(), url, bundle.rec, Options{MaxFrameSize: 1024})
		require.NoError(t, err)
		defer c.Close()
		require.ErrorIs(t, <-bundle.rec.closed, ErrFrameTooLarge)
	})

	t.Run("SilentMinerHitsReadDeadline", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		url := peer(t, func(ws *websocket.Conn) { _, _, _ = ws.ReadMessage() })
		c, err := Dial(context.Background(), url, bundle.rec, Options{ReadTimeout: 30 * time.Millisecond})
		require.NoError(t, err)
		defer c.Close()
		err = <-bundle.rec.closed
		var ne net.Error // gorilla keeps a timeout's message and Timeout(), not its chain
		require.ErrorAs(t, err, &ne)
		require.True(t, ne.Timeout())
		require.ErrorContains(t, err, "read tcp ")
	})

	t.Run("CloseEndsTheReaderWithErrClosed", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		release := make(chan struct{})
		url := peer(t, func(*websocket.Conn) { <-release }) // never answers the close frame
		defer close(release)
		c, err := Dial(context.Background(), url, bundle.rec, Options{})
		require.NoError(t, err)
		c.Close()
		err = <-bundle.rec.closed
		require.ErrorIs(t, err, net.ErrClosed, "the batch records no connection error for its own close")
		require.ErrorContains(t, err, "read tcp ")
	})

	t.Run("MinerDroppingTheSocketIsAnAbnormalClose", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		url := peer(t, func(*websocket.Conn) {}) // closes the socket without a close frame
		c, err := Dial(context.Background(), url, bundle.rec, Options{})
		require.NoError(t, err)
		defer c.Close()
		var ce *websocket.CloseError
		require.ErrorAs(t, <-bundle.rec.closed, &ce)
		require.Equal(t, websocket.CloseAbnormalClosure, ce.Code)
	})

	t.Run("PeerNotReadingIsCutOffByWriteDeadline", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		release := make(chan struct{})
		url := peer(t, func(*websocket.Conn) { <-release })
		defer close(release)
		const writeTimeout = 50 * time.Millisecond
		c, err := Dial(context.Background(), url, bundle.rec, Options{WriteTimeout: writeTimeout})
		require.NoError(t, err)
		defer c.Close()

		// A miner that reads, on its own connection, served while the other write is stuck.
		got := make(chan string, 2)
		healthyURL := peer(t, func(ws *websocket.Conn) {
			for range 2 {
				_, data, err := ws.ReadMessage()
				if err != nil {
					return
				}
				got <- string(data)
			}
			<-release // keep the connection open until the test ends
		})
		healthyRec := newRecorder()
		healthy, err := Dial(context.Background(), healthyURL, healthyRec, Options{WriteTimeout: writeTimeout})
		require.NoError(t, err)
		defer healthy.Close()

		gate := make(chan struct{})
		res := make(chan SendResult, 1)
		// 16 MiB cannot fit in the socket buffers of a peer that never reads.
		c.SendAt(gate, MaskedFrame(make([]byte, 16<<20)), nil, func(r SendResult) { res <- r })
		healthyRes := make(chan SendResult, 2)
		healthy.SendAt(gate, MaskedFrame([]byte("during")), nil, func(r SendResult) { healthyRes <- r })
		close(gate)

		// The write ends with the deadline's error, not sooner and not for another reason. No
		// wall-clock upper bound: how late a loaded machine wakes the writer is not behaviour.
		r := <-res
		require.ErrorIs(t, r.Err, os.ErrDeadlineExceeded)
		require.GreaterOrEqual(t, r.After.Sub(r.Before), writeTimeout, "cut off by the deadline, which starts at Before")
		after := make(chan SendResult, 1)
		c.Send([]byte(`{}`), func(r SendResult) { after <- r })
		require.Error(t, (<-after).Err, "a broken connection fails later sends")

		// The other connection is unaffected: its send from the same gate and one after the
		// cut-off both arrive, and it stays open.
		require.NoError(t, (<-healthyRes).Err)
		healthy.Send([]byte("after"), func(r SendResult) { healthyRes <- r })
		require.NoError(t, (<-healthyRes).Err)
		require.Equal(t, "during", <-got)
		require.Equal(t, "after", <-got)
		select {
		case err := <-healthyRec.closed:
			t.Fatalf("the healthy connection closed: %v", err)
		default:
		}
	})

	t.Run("PingIsAnsweredByTheWriter", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		pong := make(chan string, 1)
		url := peer(t, func(ws *websocket.Conn) {
			ws.SetPongHandler(func(data string) error { pong <- data; return nil })
			_ = ws.WriteControl(websocket.PingMessage, []byte("hi"), time.Now().Add(time.Second))
			_, _, _ = ws.ReadMessage()
		})
		c, err := Dial(context.Background(), url, bundle.rec, Options{})
		require.NoError(t, err)
		defer c.Close()
		require.Equal(t, "hi", <-pong)
	})

	t.Run("SendAfterCloseFails", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		url := peer(t, func(ws *websocket.Conn) { _, _, _ = ws.ReadMessage() })
		c, err := Dial(context.Background(), url, bundle.rec, Options{})
		require.NoError(t, err)
		c.Close()
		res := make(chan SendResult, 1)
		c.Send([]byte(`{}`), func(r SendResult) { res <- r })
		require.ErrorIs(t, (<-res).Err, ErrClosed)
	})
}
