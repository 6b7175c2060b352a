package migrations

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
)

// These tests create scratch databases of their own rather than using shared/testdb, which is
// built on this package. DATABASE_URL names the server (make test sets it).

func TestUpTwiceConcurrentlyIsSafeAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := scratchDatabase(t)

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = Up(ctx, url, slog.New(slog.DiscardHandler)) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, Up(ctx, url, slog.New(slog.DiscardHandler)))

	statuses, err := Status(ctx, url)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(statuses), 2*len(queue.Services), "at least a river and a common track per schema")
	for _, s := range statuses {
		require.False(t, s.Pending(), "%s/%s pending", s.Schema, s.Track)
		require.Positive(t, s.Current)
	}
}

func TestStatusOfEmptyDatabaseIsAllPending(t *testing.T) {
	t.Parallel()
	url := scratchDatabase(t)

	statuses, err := Status(context.Background(), url)
	require.NoError(t, err)
	for _, s := range statuses {
		require.True(t, s.Pending(), "%s/%s", s.Schema, s.Track)
	}
}

func TestFingerprintIsStable(t *testing.T) {
	t.Parallel()

	require.Len(t, Fingerprint(), 12)
	first := Fingerprint()
	require.Equal(t, first, Fingerprint())
}

func scratchDatabase(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	admin := serverURL()
	u, err := url.Parse(admin)
	require.NoError(t, err)
	name := fmt.Sprintf("drover_migtest_%d", rand.Int64())
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = conn.Close(context.Background())
		}
	})
	u.Path = "/" + name
	return u.String()
}

func TestDownToRollsBackOnlyTheServiceTrack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := scratchDatabase(t)
	logger := slog.New(slog.DiscardHandler)
	require.NoError(t, Up(ctx, url, logger))

	require.NoError(t, DownTo(ctx, url, queue.MinerSync, 0, logger))
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var miners, probes bool
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT to_regclass('miner_sync.miners') IS NOT NULL, to_regclass('miner_sync.probes') IS NOT NULL").Scan(&miners, &probes))
	require.False(t, miners, "the service's own tables are rolled back")
	require.True(t, probes, "the common track stays")

	statuses, err := Status(ctx, url)
	require.NoError(t, err)
	pending := 0
	for _, s := range statuses {
		if s.Pending() {
			require.Equal(t, "miner_sync", s.Schema)
			require.Equal(t, "miner_sync", s.Track)
			pending++
		}
	}
	require.Equal(t, 1, pending)
	require.NoError(t, Up(ctx, url, logger))
}

// serverURL is the test server's maintenance database.
func serverURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres"
}
