package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// benchFleet is the minersim fleet a benchmark runs against. By default it is a separate
// process built from computehorde/cmd/minersim and read over its control endpoint, so this
// process's memory and CPU are the batch-runner's (plus the benchmark's own bookkeeping). With
// BENCH_MINERSIM=inprocess it is started in this process instead: quicker to start, but the
// peak RSS and CPU then include minersim and both share one Go scheduler.
type benchFleet struct {
	mode    string
	plan    Plan
	inproc  *minersim.Fleet
	control string
	cmd     *exec.Cmd
	stopped sync.Once
}

const benchClass = "always_on.test"

// minerSpinUp is how long minersim's executors take to report ready after accepting; the
// batch waits its own, longer, spin-up (benchConfig) before the hot phase either way. A spin-up
// well past TCP's delayed-ACK timeout leaves every miner's socket in the state a real
// executor's spin-up of seconds leaves it in (see offerAll).
const minerSpinUp = time.Second

// benchScenario solves every job and answers at one fleet-wide instant, answerAt after the first
// job request arrived: all executors answer within the same millisecond, and every answer is
// right (the benchmark checks that the batch judged them so). Solving a job of benchPoWRange
// takes some 3 µs of minersim's core, well inside answerAt.
func benchScenario(answerAt time.Duration) string {
	return "*:" + benchBehaviour(answerAt)
}

func benchBehaviour(answerAt time.Duration) string {
	return fmt.Sprintf("answer=solve,answer_at=%s", answerAt)
}

// adversaries returns behaviours making the first 5 % of miners (at least one) misbehave, a
// third each way: stop reading their socket once ready (so writes to them block), answer
// slowloris-style (the final answer one byte per 100 ms), send an oversized frame before the
// answer (during the send burst: progress messages go out at once). honest is the index of the
// first well-behaved miner.
func adversaries(miners int, answerAt time.Duration) (behaviours []string, honest int) {
	n := max(1, miners*5/100)
	for k, kind := range []string{"stop_reading=ready", "slowloris=answer", "oversize=answer"} {
		lo, hi := n*k/3, n*(k+1)/3-1
		if lo <= hi {
			behaviours = append(behaviours, fmt.Sprintf("%d-%d:%s,%s", lo, hi, benchBehaviour(answerAt), kind))
		}
	}
	return behaviours, n
}

func inProcess() bool { return os.Getenv("BENCH_MINERSIM") == "inprocess" }

// buildMinersim builds the minersim command into a temporary directory, once per benchmark.
func buildMinersim(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "minersim")
	out, err := exec.CommandContext(b.Context(), "go", "build", "-o", bin, "drover.dev/computehorde/cmd/minersim").CombinedOutput()
	require.NoError(b, err, "go build minersim: %s", out)
	return bin
}

// fleetSpec is what a round's minersim runs: its binary (empty: in this process), its size,
// behaviours applied on top of benchScenario, and the cores its process is pinned to.
type fleetSpec struct {
	bin              string
	miners, perMiner int
	behaviours       []string
	cpus             []int
}

func startBenchFleet(b *testing.B, spec fleetSpec) *benchFleet {
	b.Helper()
	if inProcess() {
		return startInProcess(b, spec)
	}
	args := []string{"-miners", strconv.Itoa(spec.miners), "-classes", fmt.Sprintf("%s=%d", benchClass, spec.perMiner),
		"-spin-up", minerSpinUp.String(), "-behaviour", benchScenario(answerAt)}
	for _, be := range spec.behaviours {
		args = append(args, "-behaviour", be)
	}
	cmd := pinned(spec.cpus, spec.bin, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	f := &benchFleet{mode: "separate process", cmd: cmd}
	b.Cleanup(f.stop)
	f.control = readControlURL(b, stdout)
	var infos []minersim.MinerInfo
	var graph minersim.Metagraph
	f.get(b, "/miners", &infos)
	f.get(b, "/metagraph", &graph)
	f.plan = benchPlan(infos, graph)
	return f
}

func startInProcess(b *testing.B, spec fleetSpec) *benchFleet {
	b.Helper()
	var scenario minersim.Scenario
	require.NoError(b, scenario.Apply(benchScenario(answerAt)))
	for _, be := range spec.behaviours {
		require.NoError(b, scenario.Apply(be))
	}
	fleet, err := minersim.Start(context.Background(), minersim.Config{
		Miners: spec.miners, Manifest: protocol.Manifest{{Class: benchClass, Count: spec.perMiner}},
		SpinUp: minerSpinUp, Scenario: scenario,
	})
	require.NoError(b, err)
	f := &benchFleet{mode: "IN-PROCESS (RSS and CPU include minersim)", inproc: fleet, plan: benchPlan(fleet.Miners(), fleet.Metagraph())}
	b.Cleanup(f.stop)
	return f
}

// stop ends the fleet. A round calls it when done, so that no fleet outlives its round and
// takes memory or CPU from the next; the benchmark's cleanup calls it again, which is harmless.
func (f *benchFleet) stop() {
	f.stopped.Do(func() {
		if f.cmd != nil {
			stopProcess(f.cmd)
		} else {
			_ = f.inproc.Close()
		}
	})
}

// readControlURL waits for minersim's "minersim: control http://…" line, which it prints once
// every listener is open, then keeps draining its stdout.
func readControlURL(b *testing.B, stdout io.Reader) string {
	b.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "minersim: control "); ok {
				found <- rest
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(2 * time.Minute):
		b.Fatal("minersim did not print its control address")
		return ""
	}
}

func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

var controlClient = &http.Client{Timeout: time.Minute}

func (f *benchFleet) get(b *testing.B, path string, v any) {
	b.Helper()
	req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, f.control+path, nil)
	require.NoError(b, err)
	resp, err := controlClient.Do(req)
	require.NoError(b, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(b, http.StatusOK, resp.StatusCode, path)
	require.NoError(b, json.NewDecoder(resp.Body).Decode(v), path)
}

// arrivals returns minersim's arrival records of one message type since a unix ns instant.
func (f *benchFleet) arrivals(b *testing.B, messageType string, since int64) []minersim.Arrival {
	b.Helper()
	if f.inproc != nil {
		return f.inproc.ArrivalsWhere(minersim.ArrivalFilter{MessageType: messageType, SinceNano: since})
	}
	var as []minersim.Arrival
	f.get(b, "/arrivals?"+url.Values{"message_type": {messageType}, "since": {strconv.FormatInt(since, 10)}}.Encode(), &as)
	return as
}

func (f *benchFleet) jobs(b *testing.B) []minersim.JobRecord {
	b.Helper()
	if f.inproc != nil {
		return f.inproc.Jobs()
	}
	var js []minersim.JobRecord
	f.get(b, "/jobs", &js)
	return js
}

// benchPlan lists the fleet's miners and its metagraph's validators.
func benchPlan(infos []minersim.MinerInfo, graph minersim.Metagraph) Plan {
	plan := Plan{BatchID: 1, Validators: map[string]receipts.Validator{}, Events: sysevent.New(nil)}
	for _, m := range infos {
		plan.Miners = append(plan.Miners, Miner{Hotkey: m.Hotkey, IP: m.IP, Port: m.Port})
	}
	for _, n := range graph.Miners {
		if n.IP == "0.0.0.0" || n.Validator {
			plan.Validators[n.Hotkey] = receipts.Validator{Stake: n.Stake, Active: n.Validator}
		}
	}
	return plan
}

// usage is the CPU time this process and minersim's process have used so far.
type usage struct{ ours, minersim time.Duration }

func (f *benchFleet) usage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	u := usage{ours: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	if f.cmd != nil {
		u.minersim = procCPU(f.cmd.Process.Pid)
	}
	return u
}

// procCPU reads utime+stime of a process from /proc/<pid>/stat (in clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are fields 14 and 15.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// resetPeakRSS collects garbage, returns freed memory to the OS and resets this process's
// VmHWM (Linux ≥ 4.0), so the next reading is the peak of what follows. It reports whether
// the reset worked; if not, the peak is since the process started.
func resetPeakRSS() bool {
	runtime.GC()
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSSMiB is VmHWM, the peak resident set, of /proc/<pid>/status ("self" for this process).
func peakRSSMiB(pid string) float64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func (f *benchFleet) minersimPeakRSSMiB() float64 {
	if f.cmd == nil {
		return 0
	}
	return peakRSSMiB(strconv.Itoa(f.cmd.Process.Pid))
}
