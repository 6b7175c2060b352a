package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/benchdb"
	"drover.dev/shared/apiclient"
	"drover.dev/shared/config"
	"drover.dev/shared/servicetest"
)

// The group list's benchmark: GET /v1/groups?limit=50 with listGroups groups in the table,
// hammered by listConns connections, against a floor hammered the same way in the same run.
const (
	listGroups  = 10000
	listConns   = 16
	listRounds  = 3
	listWarm    = 500 * time.Millisecond
	listMeasure = 3 * time.Second
	// listPool is both services' pool: the same number of connections on each side, so the
	// ratio compares the statements and not the pools (the scheduler's default share is 6).
	listPool = 6
)

// BenchmarkGroupList measures the scheduler's group list against another service's list of the
// same shape. The floor is miner-sync's GET /v1/sync/events?limit=50 over as many sync events:
// like the group list it is one statement reading the newest 50 rows of a table by primary key
// (ORDER BY id DESC, a before cursor), encoded by the same shared web package behind the same
// middleware, but with no per-row subquery. It is what a list costs in Drover when nothing is
// counted per request. miner-sync runs as its own process, built from this workspace, because
// its run() lives in its own main package; the scheduler runs in this one, as its tests start
// it. Rounds alternate the two sides, as the machine's speed moves from minute to minute.
//
// Run it with: go test -run '^$' -bench GroupList -benchtime 1x . (DATABASE_URL names a server
// where it may create and drop a scratch database).
func BenchmarkGroupList(b *testing.B) {
	ctx := b.Context()
	pool, dbURL, drop, err := benchdb.Scratch(ctx, benchdb.Server(), 8, nil)
	require.NoError(b, err)
	b.Cleanup(drop)
	open, err := fillGroups(ctx, pool, listGroups)
	require.NoError(b, err)
	require.NoError(b, fillSyncEvents(ctx, pool, listGroups))
	_, err = pool.Exec(ctx, "VACUUM (ANALYZE) build_scheduler.groups, build_scheduler.job_graph, miner_sync.sync_events")
	require.NoError(b, err)

	ours := startListScheduler(b, dbURL) + "/v1/groups?limit=50"
	floor := startMinerSync(b, dbURL) + "/v1/sync/events?limit=50"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: listConns, MaxConnsPerHost: listConns}}
	b.Cleanup(client.CloseIdleConnections)
	requireListPage(b, client, ours)
	requireListPage(b, client, floor)

	fmt.Printf("group list: %d groups (%d open, the rest settled, 3 to 10 jobs each), %d connections, "+
		"%s a side, %d rounds alternated; load average %s\n",
		listGroups, open, listConns, listMeasure, listRounds, loadAverage())
	for b.Loop() {
		var oursRates, floorRates []float64
		for i := range listRounds {
			o := hammer(b, client, ours)
			f := hammer(b, client, floor)
			oursRates, floorRates = append(oursRates, o), append(floorRates, f)
			fmt.Printf("  round %d: ours %.0f requests/s, floor %.0f requests/s, %.0f %%\n", i+1, o, f, 100*o/f)
		}
		o, f := median(oursRates), median(floorRates)
		fmt.Printf("ours, GET /v1/groups?limit=50: %.0f requests/s (%.0f–%.0f)\n", o, slices.Min(oursRates), slices.Max(oursRates))
		fmt.Printf("floor, miner-sync GET /v1/sync/events?limit=50: %.0f requests/s (%.0f–%.0f)\n", f, slices.Min(floorRates), slices.Max(floorRates))
		fmt.Printf("ratio (medians): %.0f %%; load average %s\n", 100*o/f, loadAverage())
	}
}

// startListScheduler starts the scheduler in this process with nothing periodic running during
// the measurement (no reaper pass, no watchdog), so the tables stay as filled.
func startListScheduler(b *testing.B, dbURL string) string {
	b.Helper()
	var cfg Config
	require.NoError(b, config.Defaults(&cfg))
	cfg.Common = servicetest.Config(dbURL)
	cfg.DBMaxConns = listPool
	cfg.ReapInterval, cfg.WatchdogInterval, cfg.StallAfter = time.Hour, time.Hour, time.Hour
	return servicetest.Start(b, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
}

// startMinerSync builds miner-sync and runs it on dbURL until the benchmark ends. Its metagraph
// source is an empty file: its sync at start fails with one event more, and changes nothing else.
func startMinerSync(b *testing.B, dbURL string) string {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "miner-sync")
	out, err := exec.CommandContext(b.Context(), "go", "build", "-o", bin, "drover.dev/services/miner-sync").CombinedOutput()
	require.NoError(b, err, "go build miner-sync: %s", out)
	ln, err := new(net.ListenConfig).Listen(b.Context(), "tcp", "127.0.0.1:0")
	require.NoError(b, err)
	addr := ln.Addr().String()
	require.NoError(b, ln.Close())
	source := filepath.Join(dir, "metagraph.json")
	require.NoError(b, os.WriteFile(source, nil, 0o600))

	cmd := exec.CommandContext(context.WithoutCancel(b.Context()), bin) //nolint:gosec // built just above
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = append(os.Environ(), "MINER_SYNC_DATABASE_URL="+dbURL, "MINER_SYNC_HTTP_ADDR="+addr,
		"MINER_SYNC_API_TOKENS="+servicetest.Token, "MINER_SYNC_METAGRAPH_URL=file://"+source,
		"MINER_SYNC_LOG_LEVEL=warn", "MINER_SYNC_LOG_FORMAT=text", fmt.Sprint("MINER_SYNC_DB_MAX_CONNS=", listPool))
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	base := "http://" + addr
	require.Eventually(b, func() bool { return apiclient.Answers(b.Context(), base+"/readyz") }, 30*time.Second,
		50*time.Millisecond, "miner-sync did not get ready: %s", &logs)
	return base
}

// requireListPage requires url to answer a full page of 50 items, so that neither side is
// measured answering errors or empty pages.
func requireListPage(b *testing.B, client *http.Client, url string) {
	b.Helper()
	req, err := listRequest(b.Context(), url)
	require.NoError(b, err)
	resp, err := client.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	require.Equal(b, http.StatusOK, resp.StatusCode, url)
	var page struct{ Items []json.RawMessage }
	require.NoError(b, json.NewDecoder(resp.Body).Decode(&page))
	require.Len(b, page.Items, 50, url)
}

func listRequest(ctx context.Context, url string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+servicetest.Token)
	return req, nil
}

// hammer sends GETs of url from listConns connections, each waiting for its answer before the
// next, and returns the requests answered per second over listMeasure after listWarm.
func hammer(b *testing.B, client *http.Client, url string) float64 {
	b.Helper()
	start := time.Now()
	from, until := start.Add(listWarm), start.Add(listWarm+listMeasure)
	var answered atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range listConns {
		wg.Go(func() {
			for time.Now().Before(until) {
				if err := get(b.Context(), client, url); err != nil {
					failed.Store(err)
					return
				}
				if now := time.Now(); now.After(from) && now.Before(until) {
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("GET %s: %v", url, err)
	}
	return float64(answered.Load()) / listMeasure.Seconds()
}

// get sends a GET of url and reads its answer to the end, so that the connection is reused.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := listRequest(ctx, url)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// loadAverage is the machine's one-minute load average, "?" where /proc has none.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if fields := strings.Fields(string(raw)); err == nil && len(fields) > 0 {
		return fields[0]
	}
	return "?"
}
