package service

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"riverqueue.com/riverui"

	"drover.dev/queue"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// getRiverUI sends a GET to River UI with basic credentials when user is not empty.
func getRiverUI(t *testing.T, url, user, password string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, body
}

func TestRiverUIAnswersBehindBasicAuthForTheServiceQueues(t *testing.T) {
	t.Parallel()
	base := startService(t, queue.Scorer, testdb.New(t))

	t.Run("LoginRequired", func(t *testing.T) {
		t.Parallel()
		for _, creds := range [][2]string{{"", ""}, {servicetest.RiverUIUser, "wrong"}, {DefaultRiverUIUser, servicetest.Token}, {servicetest.RiverUIUser, ""}} {
			status, header, _ := getRiverUI(t, base+"/riverui/", creds[0], creds[1])
			require.Equal(t, http.StatusUnauthorized, status, creds)
			require.Equal(t, `Basic realm="River UI of scorer", charset="UTF-8"`, header.Get("WWW-Authenticate"))
		}
		status, _, _ := getRiverUI(t, base+"/riverui/api/queues", "", "")
		require.Equal(t, http.StatusUnauthorized, status)
	})

	t.Run("PageAfterLogin", func(t *testing.T) {
		t.Parallel()
		status, _, body := getRiverUI(t, base+"/riverui/", servicetest.RiverUIUser, servicetest.Token)
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), "/riverui/assets/")
	})

	t.Run("HealthCheckOpen", func(t *testing.T) {
		t.Parallel()
		status, _, _ := getRiverUI(t, base+"/riverui/api/health-checks/complete", "", "")
		require.Equal(t, http.StatusOK, status)
	})

	t.Run("QueuesOfTheService", func(t *testing.T) {
		t.Parallel()
		servicetest.RequireRiverUIQueues(t, base, queue.QueueProbe)
	})
}

func TestRiverUIIsOpenWhenAuthIsDisabled(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		cfg := servicetest.Config(dbURL)
		cfg.APITokens, cfg.AuthDisabled = nil, true
		spec := Spec{Service: queue.MinerSync, Config: cfg, Settings: &struct{}{}, Listener: ln}
		return Run(ctx, spec, stdout, func(d *Deps) error {
			_, err := d.NewClient()
			return err
		})
	})
	status, _, _ := getRiverUI(t, base+"/riverui/api/queues", "", "")
	require.Equal(t, http.StatusOK, status)
}

// TestRiverUICountsOnlyOnceOpened: River UI's background counting starts at its first request
// while the service serves, once, and never before.
func TestRiverUICountsOnlyOnceOpened(t *testing.T) {
	t.Parallel()
	client, err := queue.NewInserter(nil, queue.Scorer)
	require.NoError(t, err)
	handler, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(client, nil), Logger: slog.New(slog.DiscardHandler), Prefix: RiverUIPath,
	})
	require.NoError(t, err)
	ui := &lazyRiverUI{handler: handler, logger: slog.New(slog.DiscardHandler)}

	ui.start()
	require.False(t, ui.started, "started before the service served")

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ui.serveUntil(ctx)
	require.False(t, ui.started, "started with no request")
	ui.start()
	ui.start()
	require.True(t, ui.started)
}
