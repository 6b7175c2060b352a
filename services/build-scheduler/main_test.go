package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunServesHealthAndProbes(t *testing.T) {
	t.Parallel()
	cfg := Config{Common: servicetest.Config(testdb.New(t))}
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})

	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/healthz", nil, nil))
	var probe struct{ ID int64 }
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/probes", map[string]string{"target": "build-scheduler"}, &probe))
	require.Positive(t, probe.ID)
}
