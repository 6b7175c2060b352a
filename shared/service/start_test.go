package service

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// gatedProxy forwards TCP connections to target once opened; before, it hangs up at once, as a
// database that is not there yet (or refuses more clients) does.
type gatedProxy struct {
	ln     net.Listener
	target string
	open   atomic.Bool
}

func newGatedProxy(t *testing.T, target string) *gatedProxy {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &gatedProxy{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close() })
	go p.serve()
	return p
}

func (p *gatedProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.open.Load() {
			_ = c.Close()
			continue
		}
		go func() {
			defer c.Close()
			up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", p.target)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			_, _ = io.Copy(c, up)
		}()
	}
}

// get answers the status and body of a GET without credentials.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	status, _, body := getRiverUI(t, url, "", "")
	return status, string(body)
}

// TestServiceWaitsForItsDatabaseServingProbes starts a service whose database does not answer:
// it serves /healthz (200) and /readyz (503, naming the database's error) instead of exiting,
// refuses its API with 503, becomes ready once the database answers, and stops cleanly on
// cancellation while still waiting.
func TestServiceWaitsForItsDatabaseServingProbes(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := newGatedProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()

	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		spec := Spec{Service: queue.Scorer, Config: servicetest.Config(u.String()), Settings: &struct{}{}, Listener: ln}
		done <- Run(ctx, spec, io.Discard, func(d *Deps) error {
			_, err := d.NewClient()
			return err
		})
	}()

	require.Eventually(t, func() bool {
		status, body := get(t, base+"/readyz")
		return status == http.StatusServiceUnavailable && body != "" && !strings.Contains(body, `"connecting"`)
	}, 10*time.Second, 50*time.Millisecond, "/readyz names the database's error")
	status, _ := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, status)
	status, body := get(t, base+"/v1/probes/1")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, body, "starting")
	time.Sleep(time.Second) // several failed attempts: still running
	select {
	case err := <-done:
		t.Fatalf("the service exited while its database was away: %v", err)
	default:
	}

	proxy.open.Store(true)
	require.Eventually(t, func() bool {
		status, _ := get(t, base+"/readyz")
		return status == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond, "ready once the database answers")
	status, _ = get(t, base+"/v1/probes/1")
	require.Equal(t, http.StatusUnauthorized, status, "the routes answer")
	cancel()
	require.NoError(t, <-done)
}

func TestServiceStopsCleanlyWhileWaitingForItsDatabase(t *testing.T) {
	t.Parallel()
	proxy := newGatedProxy(t, "127.0.0.1:1")
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		cfg := servicetest.Config("postgres://postgres@" + proxy.ln.Addr().String() + "/postgres")
		spec := Spec{Service: queue.Scorer, Config: cfg, Settings: &struct{}{}, Listener: ln}
		done <- Run(ctx, spec, io.Discard, func(*Deps) error { return errors.New("never wired") })
	}()
	require.Eventually(t, func() bool {
		status, _ := get(t, "http://"+ln.Addr().String()+"/healthz")
		return status == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
