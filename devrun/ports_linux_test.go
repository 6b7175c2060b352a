package main

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckPortNamesTheHolder takes a port in this test process and requires that the check
// finds this process, by pid and command line, as a user would need to stop it.
func TestCheckPortNamesTheHolder(t *testing.T) {
	t.Parallel()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	addr := ln.Addr().String()

	err = checkPort(t.Context(), "minersim", addr)
	var taken *portTakenError
	require.ErrorAs(t, err, &taken)
	require.NotNil(t, taken.holder, "the holder of %s was not found", addr)
	require.Equal(t, os.Getpid(), taken.holder.pid)
	require.Contains(t, taken.holder.cmdline, os.Args[0])
	_, port, _ := net.SplitHostPort(addr)
	require.Contains(t, err.Error(), "port "+port+" is held by pid "+strconv.Itoa(os.Getpid()))
}
