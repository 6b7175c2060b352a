package main

import (
	"context"
	"path/filepath"
	"strconv"
	"time"
)

// The simulated miner fleet make run tests: 50 miners on 127.0.0.2 and up, two always-on test
// executors and one always-on GPU executor each, a few of them misbehaving the ways real miners
// do. Its control address serves arrivals and statistics; its Pylon stub serves the neurons
// miner-sync reads and records the weights scorer sets.
const (
	minersimAddr = "127.0.0.1:8089"
	minersimURL  = "http://" + minersimAddr
	pylonAddr    = "127.0.0.1:8090"
	pylonURL     = "http://" + pylonAddr
	// pylonToken is the identity token the stub requires and miner-sync and scorer send.
	pylonToken = "drover-dev-pylon-token"
)

// The simulated chain's head is derived from the wall clock: block chainEpochBlock at
// chainEpoch, one more every 12 s since (as the chain and minersim's Pylon stub count them), so a
// second make run on the same database continues the chain where the first left it, and
// scorer's rate limit (blocks since the last weights it sent) stays honest.
var chainEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	chainEpochBlock = 5_000_000
	chainBlockTime  = 12 * time.Second // minersim's PylonBlockTime
)

// chainHead is the simulated chain's head block at now.
func chainHead(now time.Time) int64 {
	return chainEpochBlock + int64(max(now.Sub(chainEpoch), 0)/chainBlockTime)
}

// minersimArgs are minersim's flags for a fleet started at now.
func minersimArgs(now time.Time) []string {
	return append([]string{"-block", strconv.FormatInt(chainHead(now), 10)}, minersimFlags...)
}

var minersimFlags = []string{
	"-miners", "50",
	"-classes", "always_on.test=2,always_on.gpu-24gb=1",
	"-control", minersimAddr,
	"-pylon", pylonAddr,
	"-pylon-token", pylonToken,
	"-spin-up", "300ms",
	"-behaviour", "3:decline=busy_valid",
	"-behaviour", "7:decline=busy",
	"-behaviour", "11:answer=wrong",
	"-behaviour", "19:silent=manifest",
	"-behaviour", "23:answer=fail",
	"-behaviour", "29:stop_reading=ready",
	"-behaviour", "31:answer_delay=10s",
}

// batchRunnerEnv makes a batch fit make run: proof-of-work jobs the simulated miners solve for
// real, one-second spin-ups and short timeouts, //Alice as the validator hotkey.
var batchRunnerEnv = map[string]string{
	"BATCH_RUNNER_HOTKEY_URI":       "//Alice",
	"BATCH_RUNNER_GENERATORS":       "*=pow",
	"BATCH_RUNNER_POW_TIME_LIMIT":   "5s",
	"BATCH_RUNNER_SPIN_UPS":         "*:1s",
	"BATCH_RUNNER_MIN_SPIN_UP":      "500ms",
	"BATCH_RUNNER_MANIFEST_TIMEOUT": "5s",
	"BATCH_RUNNER_READY_GRACE":      "2s",
	"BATCH_RUNNER_JOB_EXTRA":        "2s",
	"BATCH_RUNNER_RECEIPT_TIMEOUT":  "3s",
	"BATCH_RUNNER_JOB_TIMEOUT":      "2m",
	"BATCH_RUNNER_CYCLE":            "1h",
}

// minersimProcess is minersim as devrun runs it, before it starts.
func minersimProcess() *service {
	return &service{name: "minersim", url: minersimURL, addrs: []string{minersimAddr, pylonAddr}}
}

// startMinersim starts the fleet when minersim is built, and waits for its metagraph.
func (f *fleet) startMinersim(ctx context.Context, opts options, p *printer) error {
	if !built(opts, "minersim") {
		p.info("minersim is not built: no simulated miners")
		return nil
	}
	s := minersimProcess()
	if err := s.start(ctx, opts, "minersim", minersimArgs(time.Now()), nil); err != nil {
		return err
	}
	f.extra, f.minersim = append(f.extra, s), true
	if err := s.waitReady(ctx, 60*time.Second, "/healthz"); err != nil {
		return err
	}
	p.ok("%-16s %s   50 simulated miners, 150 executors, 7 misbehaving; Pylon stub at %s (log %s)", "minersim", s.url, pylonURL, filepath.Join(opts.logs, "minersim.log"))
	return nil
}
