package recvstamp

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConn(t *testing.T) {
	t.Parallel()

	t.Run("NotTCPIsStampedWhenTheReadReturns", func(t *testing.T) {
		t.Parallel()
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		c := Wrap(a)
		require.False(t, c.KernelStamping(), "no kernel stamps on a pipe")
		go func() { _, _ = b.Write([]byte("x")) }()
		before := time.Now()
		n, err := c.Read(make([]byte, 8))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.WithinRange(t, c.LastRead(), before, time.Now())
		require.False(t, c.LastReadKernel())
	})

	t.Run("ListenerWrapsWhatItAccepts", func(t *testing.T) {
		t.Parallel()
		_, server := tcpPair(t)
		require.True(t, server.KernelStamping() || runtime.GOOS != "linux", "Linux stamps TCP")
	})
}

// tcpPair connects a plain client to a Listener and returns both ends; the test closes them.
func tcpPair(t *testing.T) (net.Conn, *Conn) {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := Listener{ln}
	t.Cleanup(func() { _ = l.Close() })
	client, err := new(net.Dialer).DialContext(t.Context(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	nc, err := l.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.IsType(t, &Conn{}, nc)
	return client, nc.(*Conn)
}
