package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"drover.dev/computehorde/synthetic"
	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/work"
	"drover.dev/shared/probe"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConfig is the service's configuration for tests: //Alice, proof-of-work jobs, short
// spin-ups and timeouts, no periodic batch during the test. The manifest and ready bounds cap
// waits that end when the miner answers, and no miner here stays silent, so they are generous: on
// a loaded 2-core -race run a manifest took up to ~1.5 s and an accept or ready message ~400 ms.
// So is the jobs' time limit, which an honest executor's answer is judged against (the wait ends
// with the answer): a simulated executor solves on the same starved CPU as the service, and on a
// loaded -race run two executors' answers came 1.03 s after their request, over a 1 s limit. The
// proof of work is a range of 1,024, not 32,768: the tests check the batch, not the miners'
// hashing, and every hash is CPU the service under test does not get.
func testConfig(databaseURL string) Config {
	return Config{
		Common: servicetest.Config(databaseURL), HotkeyURI: "//Alice",
		Cycle: time.Hour, PeakEvery: 1, JobTimeout: time.Minute,
		Generators: "*=pow", PoWRange: testPoWRange, PoWTimeLimit: testPoWTimeLimit, Headroom: 1.2,
		SpinUps: map[string]time.Duration{"*": 100 * time.Millisecond}, MinSpinUp: 50 * time.Millisecond,
		ManifestTimeout: 5 * time.Second, ReadyGrace: 2 * time.Second, JobExtra: 300 * time.Millisecond,
		ReceiptTimeout: time.Second, WriteTimeout: time.Second, SlowSend: 100 * time.Millisecond,
		MaxFrameSize: 1 << 20, ExcuseMinStake: 30000,
		ShardWorkers: 2, ShardWait: 5 * time.Second, SendMargin: 250 * time.Millisecond, ShardPoll: 10 * time.Millisecond,
		Lease: 20 * time.Second, LeaseSweep: 10 * time.Second,
	}
}

// The proof-of-work jobs of the tests: see testConfig.
const (
	testPoWRange     = 1 << 10
	testPoWTimeLimit = 10 * time.Second
)

func startService(t *testing.T, cfg Config) string {
	t.Helper()
	return servicetest.Start(t, func(ctx context.Context, ln net.Listener, stdout io.Writer) error {
		return run(ctx, cfg, ln, stdout)
	})
}

func TestRunServesHealthAndProbes(t *testing.T) {
	t.Parallel()
	base := startService(t, testConfig(testdb.New(t)))
	servicetest.RequireRiverUIQueues(t, base, queue.QueueProbe, queue.QueueBatches, queue.QueueBatchShards)

	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, base+"/healthz", nil, nil))
	var probe struct{ ID int64 }
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/probes", map[string]string{"target": "batch-runner"}, &probe))
	require.Positive(t, probe.ID)
}

func TestBadTextIsRejected(t *testing.T) {
	t.Parallel()
	servicetest.RequireBadInputRejected(t, startService(t, testConfig(testdb.New(t))))
}

func TestRunRefusesToStartWithoutHotkey(t *testing.T) {
	t.Parallel()
	cfg := testConfig("postgres://unused")
	cfg.HotkeyURI = ""
	err := run(context.Background(), cfg, nil, io.Discard)
	require.ErrorContains(t, err, "BATCH_RUNNER_HOTKEY_URI")
}

func TestRunRefusesShardSettingsThatCannotMeet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"NoShardSlot", func(c *Config) { c.ShardWorkers = 0 }, "BATCH_RUNNER_SHARD_WORKERS"},
		{"MarginWithinAPoll", func(c *Config) { c.SendMargin = c.ShardPoll }, "BATCH_RUNNER_SEND_MARGIN"},
		{"TwoWaitsOutlastTheJob", func(c *Config) { c.ShardMiners, c.ShardWait = 50, c.JobTimeout/2 }, "BATCH_RUNNER_JOB_TIMEOUT"},
		{"NegativeShard", func(c *Config) { c.ShardMiners = -1 }, "BATCH_RUNNER_SHARD_MINERS"},
		{"LeaseNoRenewalCouldKeep", func(c *Config) { c.Lease = 100 * time.Millisecond }, "BATCH_RUNNER_LEASE 100ms: at least 1s"},
		{"NoSweep", func(c *Config) { c.LeaseSweep = 0 }, "BATCH_RUNNER_LEASE_SWEEP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("postgres://unused")
			tc.change(&cfg)
			require.ErrorContains(t, run(context.Background(), cfg, nil, io.Discard), tc.want)
		})
	}
}

func TestPoWSettingsReachTheGenerator(t *testing.T) {
	t.Parallel()
	cfg := testConfig("postgres://unused")
	cfg.PoWRange, cfg.PoWTimeLimit = 1<<10, 3*time.Second
	gens, _, err := generators(cfg)
	require.NoError(t, err)
	require.Equal(t, synthetic.PoWGenerator{Range: 1 << 10, Limit: 3 * time.Second}, gens.For("always_on.test"))
}

// TestRescueAfterIsTheShortestTimeout checks River's RescueStuckJobsAfter against the bound every
// kind keeps: the rescuer takes back a dead process's job once both RescueStuckJobsAfter and the
// kind's own timeout have passed, so with RescueStuckJobsAfter at most the shortest timeout a
// batch is back within JOB_TIMEOUT + 30 s and a probe within a minute. A setting that would
// break the bound is refused.
func TestRescueAfterIsTheShortestTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		jobTimeout, setting time.Duration
		want                time.Duration
		err                 string
	}{
		{"Default", 15 * time.Minute, 0, probe.Timeout, ""},
		{"ShortBatches", 8 * time.Second, 0, 8 * time.Second, ""},
		{"Shorter", 15 * time.Minute, 10 * time.Second, 10 * time.Second, ""},
		{"PastAProbesTimeout", 15 * time.Minute, time.Minute, 0, "BATCH_RUNNER_RESCUE_AFTER 1m0s: must be positive and at most 30s"},
		{"PastTheBatchTimeout", 8 * time.Second, 9 * time.Second, 0, "at most 8s"},
		{"NoBatchTimeout", 0, 0, 0, "BATCH_RUNNER_JOB_TIMEOUT 0s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("postgres://unused")
			cfg.JobTimeout, cfg.RescueAfter = tc.jobTimeout, tc.setting
			got, err := rescueAfter(cfg)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			worker := &work.RunBatchWorker{JobTimeout: cfg.JobTimeout}
			require.LessOrEqual(t, got, worker.Timeout(nil))
			require.LessOrEqual(t, got, (&work.RunBatchShardWorker{JobTimeout: cfg.JobTimeout}).Timeout(nil))
			require.LessOrEqual(t, got, (&probe.Worker{}).Timeout(nil))
		})
	}
}
