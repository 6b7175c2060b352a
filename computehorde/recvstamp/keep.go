package recvstamp

import (
	"context"
	"errors"
	"net"
	"time"
)

// KeepStamping opens a loopback connection that asks for kernel stamps and returns once the
// kernel stamps its packets; the returned function closes it. Linux stamps received packets
// machine-wide while any socket asks for it, and turns stamping on from a work queue a moment
// after the first one does: until then a fresh connection's packets arrive unstamped and are
// stamped when the read returns. Tests that need the kernel's stamps hold one open. It fails
// where the platform has no kernel stamps or none arrives within timeout; ctx bounds the
// connection's setup.
func KeepStamping(ctx context.Context, timeout time.Duration) (stop func(), err error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	client, err := new(net.Dialer).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	server, err := ln.Accept()
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	stop = func() { _ = client.Close(); _ = server.Close() }
	if err := waitStamped(Wrap(client), server, timeout); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// ErrNoKernelStamps reports that the kernel stamped no read.
var ErrNoKernelStamps = errors.New("no kernel receive timestamps")

func waitStamped(c *Conn, peer net.Conn, timeout time.Duration) error {
	if !c.KernelStamping() {
		return ErrNoKernelStamps
	}
	buf := make([]byte, 1)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := peer.Write([]byte("x")); err != nil {
			return err
		}
		if _, err := c.Read(buf); err != nil {
			return err
		}
		if c.LastReadKernel() {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return ErrNoKernelStamps
}
