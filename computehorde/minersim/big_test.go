package minersim

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/computehorde/synthetic"
)

var (
	bigRun     = flag.Bool("minersim.big", false, "run TestFleetBig: a full PoW job on every executor of a large fleet")
	bigMiners  = flag.Int("minersim.miners", 2000, "TestFleetBig: miners of the in-process fleet")
	bigPerMin  = flag.Int("minersim.executors", 5, "TestFleetBig: always_on.test executors per miner of the in-process fleet")
	bigControl = flag.String("minersim.control", "", "TestFleetBig: control URL of an external fleet (cmd/minersim) to drive instead")
	bigPID     = flag.Int("minersim.pid", 0, "TestFleetBig: pid of the external fleet, to report its RSS and CPU")
)

// TestFleetBig plays a validator against every miner of a large fleet at once: one connection
// per miner, a full proof-of-work job per executor with every receipt signed and verified. It
// reports the fleet's memory and CPU. Run it with -minersim.big (see README.md).
func TestFleetBig(t *testing.T) {
	t.Parallel()
	if !*bigRun {
		t.Skip("set -minersim.big to run")
	}
	raiseOpenFiles(t)
	pid, miners := os.Getpid(), []MetagraphEntry(nil)
	if *bigControl == "" {
		cfg := Config{Miners: *bigMiners, Manifest: protocol.Manifest{{Class: testClass, Count: *bigPerMin}}, SpinUp: time.Second}
		f, err := Start(context.Background(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, f.Close()) })
		miners = f.Metagraph().Miners
	} else {
		pid = *bigPID
		miners = fetchMetagraph(t, *bigControl).Miners
	}
	before := readProc(t, pid)
	key := aliceKey(t)
	start := time.Now()
	var wg sync.WaitGroup
	var jobs, failures atomic.Int64
	errs := make(chan error, 16)
	served, handshakes := 0, make(chan struct{}, 100)
	for _, m := range miners {
		if m.Port == 0 {
			continue // a validator entry: it serves no axon
		}
		served++
		wg.Go(func() {
			n, err := driveMiner(key, MinerInfo{Hotkey: m.Hotkey, IP: m.IP, Port: m.Port}, handshakes)
			jobs.Add(int64(n))
			if err != nil {
				failures.Add(1)
				select {
				case errs <- fmt.Errorf("miner %d: %w", m.UID, err):
				default:
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	after := readProc(t, pid)
	t.Logf("%d jobs solved and receipted on %d miners in %s; fleet pid %d: RSS %d MiB (peak %d MiB), CPU %.1f s user+sys during the run",
		jobs.Load(), served, time.Since(start).Round(time.Millisecond), pid,
		after.rssKiB>>10, after.peakKiB>>10, after.cpuSeconds-before.cpuSeconds)
	require.Zero(t, failures.Load())
}

// driveMiner runs one validator connection: auth, every executor's job, every receipt.
func driveMiner(key *hotkey.Keypair, m MinerInfo, handshakes chan struct{}) (int, error) {
	// Bound concurrent handshakes: with thousands in flight on two cores, an auth message can
	// wait in the miner's socket longer than its 10 s validity.
	handshakes <- struct{}{}
	d := websocket.Dialer{HandshakeTimeout: time.Minute}
	ws, resp, err := d.Dial(m.URL(key.Address()), nil)
	closeBody(resp)
	if err != nil {
		<-handshakes
		return 0, err
	}
	defer ws.Close()
	c := bigConn{ws: ws, key: key, miner: m}
	msg, err := c.handshake()
	<-handshakes
	if err != nil {
		return 0, err
	}
	count := msg.(*protocol.V0ExecutorManifestRequest).Manifest.Counts()[testClass]
	jobs := make(map[string]*testJob, count)
	for range count {
		j, err := c.offer()
		if err != nil {
			return 0, err
		}
		jobs[j.uuid] = j
	}
	return c.finish(jobs)
}

func (c *bigConn) handshake() (protocol.Message, error) {
	if err := c.send(protocol.NewValidatorAuth(c.key, c.miner.Hotkey, time.Now())); err != nil {
		return nil, err
	}
	return c.next("V0ExecutorManifestRequest")
}

type bigConn struct {
	ws    *websocket.Conn
	key   *hotkey.Keypair
	miner MinerInfo
}

func (c *bigConn) send(msg protocol.Message) error {
	data, err := protocol.Encode(msg)
	if err != nil {
		return err
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(time.Minute))
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// next reads until a message of the given type, skipping progress messages.
func (c *bigConn) next(messageType string) (protocol.Message, error) {
	for {
		_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return nil, err
		}
		msg, err := protocol.DecodeFromMiner(data)
		if err != nil {
			return nil, err
		}
		switch msg.MessageType() {
		case messageType:
			return msg, nil
		case "V0VolumesReadyRequest", "V0ExecutionDoneRequest", "V0MachineSpecsRequest":
		default:
			return nil, fmt.Errorf("want %s, got %s", messageType, data)
		}
	}
}

func (c *bigConn) offer() (*testJob, error) {
	job, err := synthetic.PoWGenerator{}.Generate(c.miner.Hotkey, testClass, rand.Reader)
	if err != nil {
		return nil, err
	}
	j := &testJob{uuid: newUUID(), job: job}
	j.started = receipts.JobStarted{
		Header:        receipts.Header{JobUUID: j.uuid, MinerHotkey: c.miner.Hotkey, ValidatorHotkey: c.key.Address(), Timestamp: time.Now().UTC()},
		ExecutorClass: testClass, TTL: receipts.StartedTTL(3*time.Second, job.TimeLimit),
	}
	image := job.Initial.DockerImage
	return j, c.send(&protocol.V0InitialJobRequest{
		JobUUID: j.uuid, ExecutorClass: testClass, DockerImage: &image,
		JobStartedReceiptPayload: j.started, JobStartedReceiptSignature: receipts.Sign(&j.started, c.key),
	})
}

// finish accepts, readies, runs and receipts every offered job, taking the miner's messages
// in whatever order a loaded machine delivers them.
func (c *bigConn) finish(jobs map[string]*testJob) (int, error) {
	ready, solved := 0, 0
	for solved < len(jobs) {
		msg, err := c.nextAny()
		if err != nil {
			return solved, err
		}
		switch m := msg.(type) {
		case *protocol.V0AcceptJobRequest:
			err = c.sendAccepted(jobs[m.JobUUID])
		case *protocol.V0ExecutorReadyRequest:
			if ready++; ready == len(jobs) {
				err = c.sendJobs(jobs) // as the batch does, once every executor is ready
			}
		case *protocol.V0JobFinishedRequest:
			err = c.receiptFinished(jobs[m.JobUUID], m.DockerProcessStdout)
			solved++
		default:
			err = fmt.Errorf("unexpected %s", msg.MessageType())
		}
		if err != nil {
			return solved, err
		}
	}
	return solved, nil
}

func (c *bigConn) nextAny() (protocol.Message, error) {
	for {
		_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return nil, err
		}
		msg, err := protocol.DecodeFromMiner(data)
		if err != nil {
			return nil, err
		}
		switch msg.(type) {
		case *protocol.V0VolumesReadyRequest, *protocol.V0ExecutionDoneRequest, *protocol.V0MachineSpecsRequest:
		default:
			return msg, nil
		}
	}
}

func (c *bigConn) sendAccepted(j *testJob) error {
	now := time.Now().UTC()
	p := receipts.JobAccepted{Header: j.started.Header, TimeAccepted: now, TTL: receipts.AcceptedTTL}
	return c.send(&protocol.V0JobAcceptedReceiptRequest{Payload: p, Signature: receipts.Sign(&p, c.key)})
}

func (c *bigConn) sendJobs(jobs map[string]*testJob) error {
	for _, j := range jobs {
		r := j.job.Request
		if err := c.send(&protocol.V0JobRequest{
			JobUUID: j.uuid, ExecutorClass: testClass, DockerImage: r.DockerImage, RawScript: &r.RawScript,
			DockerRunOptionsPreset: protocol.PresetNone, DockerRunCmd: r.DockerRunCmd, Env: r.Env,
		}); err != nil {
			return err
		}
	}
	return nil
}

func (c *bigConn) receiptFinished(j *testJob, stdout string) error {
	if !j.job.Verify(stdout) {
		return fmt.Errorf("job %s: wrong answer %q", j.uuid, stdout)
	}
	now := time.Now().UTC()
	p := receipts.JobFinished{Header: j.started.Header, TimeStarted: now, TimeTookUS: 1, ScoreStr: "1"}
	return c.send(&protocol.V0JobFinishedReceiptRequest{Payload: p, Signature: receipts.Sign(&p, c.key)})
}

func fetchMetagraph(t *testing.T, control string) Metagraph {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, control+"/metagraph", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var g Metagraph
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&g))
	return g
}

type procStats struct {
	rssKiB, peakKiB int64
	cpuSeconds      float64
}

// readProc reads a process's resident memory and CPU time from /proc (Linux).
func readProc(t *testing.T, pid int) procStats {
	t.Helper()
	var s procStats
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				s.rssKiB = n
			} else {
				s.peakKiB = n
			}
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64) // fields 14 and 15 of stat, after pid and comm
	stime, _ := strconv.ParseFloat(fields[12], 64)
	s.cpuSeconds = (utime + stime) / 100 // USER_HZ is 100 on Linux
	return s
}

func raiseOpenFiles(t *testing.T) {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	lim.Cur = lim.Max
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
}
