package minerconn

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStampConn(t *testing.T) {
	t.Parallel()

	t.Run("NotTCPIsStampedWhenTheReadReturns", func(t *testing.T) {
		t.Parallel()
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		c := newStampConn(a)
		require.Nil(t, c.recv, "no kernel stamps on a pipe")
		go func() { _, _ = b.Write([]byte("x")) }()
		before := time.Now()
		n, err := c.Read(make([]byte, 8))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.WithinRange(t, c.lastRead, before, time.Now())
	})
}
