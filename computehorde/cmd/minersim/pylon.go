package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"drover.dev/computehorde/minersim"
)

// servePylon serves fleet's Pylon stub on addr until ctx ends; the returned function waits for
// it to stop. With no addr it serves nothing.
func servePylon(ctx context.Context, fleet *minersim.Fleet, addr, token string, stdout io.Writer) (func() error, error) {
	if addr == "" {
		return func() error { return nil }, nil
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-pylon: %w", err)
	}
	srv := &http.Server{Handler: minersim.NewPylon(fleet, token).Handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "minersim: pylon http://%s\n", ln.Addr())
	return func() error {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(shutdown)
		if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		return err
	}, nil
}
