package batch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// BenchmarkShardedHotPhase runs a batch of BENCH_SHARDED_EXECUTORS executors (default 10,000;
// 0 skips it) as a sharded batch over BENCH_SHARDS batch-runner processes (default 2), as in
// production: each process works one shard and they agree their send instant through Postgres
// (a fresh database per round). Its arrival spread, as minersim's kernel stamps saw it, is
// compared with the floor's over the same fleet (this process writing the same frames to one
// connection per miner, each taken through the batch's exchange first: see floor). The processes run on the validator's cores,
// minersim on the others. Rounds: BENCH_ROUNDS (default 5). Run with -benchtime 1x.
func BenchmarkShardedHotPhase(b *testing.B) {
	n := envInt(b, "BENCH_SHARDED_EXECUTORS", 10000)
	if n == 0 || inProcess() {
		b.Skip("BENCH_SHARDED_EXECUTORS=0 or BENCH_MINERSIM=inprocess: no sharded batch")
	}
	raiseFileLimit(b)
	perMiner := envInt(b, "BENCH_PER_MINER", 10)
	rounds := envInt(b, "BENCH_ROUNDS", 5)
	shards := envInt(b, "BENCH_SHARDS", 2)
	require.Positive(b, rounds, "BENCH_ROUNDS")
	require.Positive(b, shards, "BENCH_SHARDS")
	cpus, minersimBin, runnerBin := splitCores(), buildMinersim(b), buildBatchRunner(b)
	miners := (n + perMiner - 1) / perMiner
	b.Run(fmt.Sprintf("executors=%d/shards=%d", n, shards), func(b *testing.B) {
		for b.Loop() {
			f := figures{executors: n, b: b, cores: cpus}
			rs := make([]shardedRound, rounds)
			for i := range rs {
				spec := fleetSpec{bin: minersimBin, miners: miners, perMiner: perMiner, cpus: cpus.miners}
				rs[i] = runShardedRound(b, spec, runnerBin, shards, cpus.validator)
				f.shardedRound(i+1, rounds, rs[i])
			}
			f.shardedSummary(rs, shards)
		}
	})
}

// shardedRound is what one sharded round measured.
type shardedRound struct {
	send, arrival spread
	releases      time.Duration // between the first and the last shard's release, on their clocks
	peakRSS       float64       // MiB, the largest batch-runner process's VmHWM
	executors     int           // that got their job request
	right         int           // answers judged right
	reasons       map[string]int
}

func buildBatchRunner(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "batch-runner")
	out, err := exec.CommandContext(b.Context(), "go", "build", "-o", bin, "drover.dev/services/batch-runner").CombinedOutput()
	require.NoError(b, err, "go build batch-runner: %s", out)
	return bin
}

func runShardedRound(b *testing.B, spec fleetSpec, bin string, shards int, cpus []int) shardedRound {
	b.Helper()
	fleet := startBenchFleet(b, spec)
	defer fleet.stop()
	dbURL := testdb.New(b)
	listBenchFleet(b, dbURL, fleet)
	var procs []*exec.Cmd
	var base string
	for i := range shards {
		cmd, url := startBatchRunner(b, bin, cpus, shardEnv(dbURL, (spec.miners+shards-1)/shards), i)
		procs = append(procs, cmd)
		base = url
	}
	defer func() {
		for _, p := range procs {
			stopProcess(p)
		}
	}()
	v := runShardedBatch(b, base)
	var r shardedRound
	for _, p := range procs {
		r.peakRSS = max(r.peakRSS, peakRSSMiB(strconv.Itoa(p.Process.Pid)))
	}
	require.Equal(b, "done", v.State, "the sharded batch ended: %v", v.Counts)
	require.Len(b, v.Shards, shards)
	arrivals := fleet.arrivals(b, "V0JobRequest", 0)
	// On a loaded machine a few executors are not ready in time; the floor then writes as many
	// frames to each miner as the batch did, so both spreads cover the same executors.
	r.executors, r.reasons = len(arrivals), v.reasons()
	require.GreaterOrEqual(b, 10*r.executors, 9*spec.miners*spec.perMiner, "nine executors in ten got their job; reasons %v", r.reasons)
	r.right = r.reasons[string(ReasonSuccess)]
	requireRight(b, r.executors, r.right, r.reasons)
	r.send.ours, r.arrival.ours, r.releases = v.sendSpread(), arrivalSpread(arrivals), v.releaseSpread()
	r.send.floor, r.arrival.floor = floor(b, fleet, aliceKey(b), jobsPerMiner(fleet.plan, arrivals))
	return r
}

// listBenchFleet writes the fleet's metagraph into miner_sync.miners, as miner-sync keeps it:
// the table batch-runner reads its miners from.
func listBenchFleet(b *testing.B, dbURL string, fleet *benchFleet) {
	b.Helper()
	var graph minersim.Metagraph
	fleet.get(b, "/metagraph", &graph)
	rows := make([][]any, len(graph.Miners))
	for i, n := range graph.Miners {
		rows[i] = []any{n.Hotkey, n.UID, n.Coldkey, n.IP, n.Port, n.Stake, n.Validator, n.Port != 0}
	}
	pool := testdb.NewPoolFor(b, dbURL)
	_, err := pool.CopyFrom(context.Background(), pgx.Identifier{"miner_sync", "miners"},
		[]string{"hotkey", "uid", "coldkey", "ip", "port", "stake", "is_validator", "serving"}, pgx.CopyFromRows(rows))
	require.NoError(b, err)
}

// shardSpinUp is the executors' spin-up of the sharded batch: the time the shards have, on the
// one core the validator's side gets, to offer 10,000 jobs and have their executors ready
// (3 s, benchConfig's, left a quarter of them unready on a loaded machine).
const shardSpinUp = 10 * time.Second

// shardEnv configures a batch-runner process as benchConfig configures batch.Run (the same
// proof-of-work difficulty, so minersim solves every job in time), with
// batches split into shards of shardMiners miners and one shard per process at a time, and a
// longer spin-up (shardSpinUp).
func shardEnv(dbURL string, shardMiners int) []string {
	return []string{
		"BATCH_RUNNER_DATABASE_URL=" + dbURL, "BATCH_RUNNER_API_TOKENS=" + servicetest.Token,
		"BATCH_RUNNER_LOG_LEVEL=warn", "BATCH_RUNNER_HOTKEY_URI=//Alice", "BATCH_RUNNER_CYCLE=24h",
		"BATCH_RUNNER_GENERATORS=*=pow", "BATCH_RUNNER_POW_TIME_LIMIT=5s", "BATCH_RUNNER_POW_RANGE=" + strconv.Itoa(benchPoWRange),
		"BATCH_RUNNER_SPIN_UPS=*:" + shardSpinUp.String(), "BATCH_RUNNER_MIN_SPIN_UP=50ms",
		"BATCH_RUNNER_MANIFEST_TIMEOUT=20s", "BATCH_RUNNER_READY_GRACE=5s", "BATCH_RUNNER_JOB_EXTRA=2s",
		"BATCH_RUNNER_RECEIPT_TIMEOUT=10s", "BATCH_RUNNER_WRITE_TIMEOUT_MINER=5s",
		"BATCH_RUNNER_SHARD_MINERS=" + strconv.Itoa(shardMiners), "BATCH_RUNNER_SHARD_WORKERS=1",
		"BATCH_RUNNER_SHARD_WAIT=1m", "BATCH_RUNNER_JOB_TIMEOUT=5m",
	}
}

// startBatchRunner starts one batch-runner process pinned to cpus on a free loopback port and
// waits until it is ready; it returns the process and its base URL.
func startBatchRunner(b *testing.B, bin string, cpus []int, env []string, i int) (*exec.Cmd, string) {
	b.Helper()
	ln, err := new(net.ListenConfig).Listen(b.Context(), "tcp", "127.0.0.1:0")
	require.NoError(b, err)
	addr := ln.Addr().String()
	require.NoError(b, ln.Close())
	cmd := pinned(cpus, bin)
	cmd.Env = append(env, "BATCH_RUNNER_HTTP_ADDR="+addr, "PATH="+os.Getenv("PATH"))
	logFile, err := os.Create(filepath.Join(b.TempDir(), fmt.Sprintf("batch-runner-%d.log", i)))
	require.NoError(b, err)
	b.Cleanup(func() { _ = logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(b, cmd.Start())
	base := "http://" + addr
	require.Eventually(b, func() bool {
		req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "batch-runner %d did not become ready (log %s)", i, logFile.Name())
	return cmd, base
}

// shardedBatch is the part of GET /v1/batches/{id} the benchmark reads.
type shardedBatch struct {
	ID     int64          `json:"id"`
	State  string         `json:"state"`
	Counts map[string]int `json:"counts"`
	Shards []struct {
		ReleasedAt *time.Time `json:"released_at"`
	} `json:"shards"`
	Jobs []struct {
		Reason       string     `json:"reason"`
		BeforeSendAt *time.Time `json:"before_send_at"`
		AfterSendAt  *time.Time `json:"after_send_at"`
	} `json:"jobs"`
}

// runShardedBatch asks base for a batch and waits until it is no longer running.
func runShardedBatch(b *testing.B, base string) shardedBatch {
	b.Helper()
	var created struct {
		JobID int64 `json:"job_id"`
	}
	require.Equal(b, http.StatusAccepted, servicetest.Call(b, http.MethodPost, base+"/v1/batches", nil, &created))
	var v shardedBatch
	require.Eventually(b, func() bool {
		var list struct{ Items []shardedBatch }
		servicetest.Call(b, http.MethodGet, fmt.Sprintf("%s/v1/batches?job_id=%d", base, created.JobID), nil, &list)
		if len(list.Items) == 0 || list.Items[0].State == "running" {
			return false
		}
		v = shardedBatch{}
		require.Equal(b, http.StatusOK, servicetest.Call(b, http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, list.Items[0].ID), nil, &v))
		return true
	}, 5*time.Minute, 250*time.Millisecond)
	return v
}

// sendSpread is max(after-send) − min(before-send) over the batch's jobs, whichever shard
// sent them (each on its own clock).
func (v shardedBatch) sendSpread() time.Duration {
	var before, after []time.Time
	for _, j := range v.Jobs {
		if j.BeforeSendAt != nil && j.AfterSendAt != nil {
			before, after = append(before, *j.BeforeSendAt), append(after, *j.AfterSendAt)
		}
	}
	if len(before) == 0 {
		return 0
	}
	return slices.MaxFunc(after, time.Time.Compare).Sub(slices.MinFunc(before, time.Time.Compare))
}

func (v shardedBatch) releaseSpread() time.Duration {
	var at []time.Time
	for _, s := range v.Shards {
		if s.ReleasedAt != nil {
			at = append(at, *s.ReleasedAt)
		}
	}
	if len(at) == 0 {
		return 0
	}
	return slices.MaxFunc(at, time.Time.Compare).Sub(slices.MinFunc(at, time.Time.Compare))
}

// reasons counts the batch's jobs by verdict reason.
func (v shardedBatch) reasons() map[string]int {
	n := map[string]int{}
	for _, j := range v.Jobs {
		n[j.Reason]++
	}
	return n
}
