package batch

import (
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/synthetic"
	"drover.dev/services/batch-runner/internal/minerconn"
)

// floorJob is one job of the floor (or of the asyncio method), serialised as the batch
// serialises it.
type floorJob struct {
	uuid    string
	spec    synthetic.Job
	request []byte // V0JobRequest, unmasked JSON
}

// floorJobs prepares, for each miner i of the fleet, jobs[i] jobs with fresh UUIDs, so that the
// floor and the asyncio method send the same frames as the batch to the same miners.
func floorJobs(b *testing.B, fleet *benchFleet, jobs []int) (perMiner [][]floorJob, uuids map[string]bool) {
	b.Helper()
	perMiner, uuids = make([][]floorJob, len(fleet.plan.Miners)), map[string]bool{}
	cfg := benchConfig(b).WithDefaults()
	for i, m := range fleet.plan.Miners {
		for range jobs[i] {
			spec, err := cfg.Generators["*"].Generate(m.Hotkey, benchClass, cfg.Rand)
			require.NoError(b, err)
			uuid, err := newUUID(cfg.Rand)
			require.NoError(b, err)
			uuids[uuid] = true
			request, err := protocol.Encode(jobRequest(&job{uuid: uuid, class: benchClass, spec: spec}))
			require.NoError(b, err)
			perMiner[i] = append(perMiner[i], floorJob{uuid: uuid, spec: spec, request: request})
		}
	}
	return perMiner, uuids
}

// floor opens one connection per miner, authenticates, takes each connection through the
// batch's exchange for its jobs (see offerAll), then, at its release, writes each miner's
// prepared V0JobRequests (jobs[i] to miner i, as many as the batch sent it) as the burst does:
// one bare loop of raw writes (minerconn.WriteRaw) per processor, over the miners in random order, and
// what a socket buffer does not take written after the loops, under the write timeout.
func floor(b *testing.B, fleet *benchFleet, key *hotkey.Keypair, jobs []int) (send, arrival time.Duration) {
	b.Helper()
	conns := dialAll(b, fleet.plan, key)
	defer closeFloor(conns)
	perMiner, uuids := floorJobs(b, fleet, jobs)
	offerAll(b, conns, fleet.plan, key, perMiner)
	var sends []*floorSend
	for i, c := range conns {
		if len(perMiner[i]) == 0 {
			continue // the batch wrote nothing to this miner either
		}
		s := &floorSend{miner: i, conn: c.ws.NetConn()}
		sc, ok := s.conn.(syscall.Conn)
		require.True(b, ok, "floor connection %d is not a socket", i)
		raw, err := sc.SyscallConn()
		require.NoError(b, err)
		s.raw = raw
		for _, j := range perMiner[i] {
			s.frames = append(s.frames, minerconn.MaskedFrame(j.request)...)
		}
		sends = append(sends, s)
	}
	require.NotEmpty(b, sends, "no miner has a job")
	rand.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] }) // the batch's map order
	parts := runtime.GOMAXPROCS(0)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for k := 1; k < parts; k++ {
		wg.Go(func() {
			<-gate
			writeFloorPart(sends, k, parts)
		})
	}
	// The release, after 50 ms of polling the clock. This process has been idle until now, and
	// Go's sysmon thread, woken from idle, checks the scheduler every 20 µs before it backs off
	// over some 15 ms; on the one core the loop gets, each check takes the core from the loop
	// (traced: some 30 thread switches in a 100-write loop that began 1 ms after a sleep). The
	// batch's process is not idle before its release, and its burst saw 0–3. The collection
	// first, so that none runs during the loop.
	runtime.GC()
	for t := time.Now().Add(50 * time.Millisecond); time.Now().Before(t); {
		runtime.Gosched()
	}
	release := time.Now()
	close(gate)
	writeFloorPart(sends, 0, parts)
	wg.Wait()
	timeout := benchConfig(b).WriteTimeout
	for _, s := range sends {
		if s.err == nil && s.n < len(s.frames) {
			_ = s.conn.SetWriteDeadline(s.before.Add(timeout))
			_, s.err = s.conn.Write(s.frames[s.n:])
			s.after = time.Now()
		}
	}
	first, last := sends[0].before, sends[0].after
	for _, s := range sends {
		require.NoError(b, s.err, "floor write to miner %d", s.miner)
		first, last = minTime(first, s.before), maxTime(last, s.after)
	}
	return last.Sub(first), arrivalSpread(fleet.waitArrivals(b, uuids, release.UnixNano()))
}

// writeFloorPart writes part k of parts of the floor's sends: every parts-th from the k-th, one
// raw write each, as minerconn.Burst.Write does.
func writeFloorPart(sends []*floorSend, k, parts int) {
	for i := k; i < len(sends); i += parts {
		s := sends[i]
		s.before = time.Now()
		s.n, s.err = minerconn.WriteRaw(s.raw, s.frames)
		s.after = time.Now()
	}
}

// floorSend is one miner's write of the floor.
type floorSend struct {
	miner         int
	conn          net.Conn
	raw           syscall.RawConn
	frames        []byte
	n             int // written by the raw write
	before, after time.Time
	err           error
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// offerAll takes every connection through the availability exchange the batch has with it
// before its hot phase, for each of the miner's jobs: V0InitialJobRequest, the miner's
// V0AcceptJobRequest, the JobAccepted receipt, the miner's V0ExecutorReadyRequest, then quiet
// until the batch's spin-up has passed (benchConfig's 3 s; the sharded batch's 10 s leaves its
// sockets in the same state, quiet past TCP's timers). The floor's writes then find the miners'
// sockets as the batch's writes find them, which matters on loopback: the miner's kernel takes
// each write in on the writer's core, inside the write, and when it acknowledges at once, that
// ACK is built, sent and taken in by the writer's socket inside the same write. Whether it does
// depends on what the connection exchanged before. A socket whose last act was to answer at once (the manifest,
// right after the authentication) delays its ACK; one that has been quiet since its executors
// reported ready, a spin-up after they accepted (minerSpinUp), acknowledges at once. Without
// the exchange, a fifth of the floor's writes were acknowledged at once against six in ten of
// the batch's (with minersim's spin-up at 50 ms then).
func offerAll(b *testing.B, conns []*floorConn, plan Plan, key *hotkey.Keypair, perMiner [][]floorJob) {
	b.Helper()
	cfg := benchConfig(b)
	spin, _ := cfg.spinUp(benchClass)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		wg.Go(func() { errs[i] = c.offer(plan.Miners[i].Hotkey, key, perMiner[i], spin) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(b, err, "floor exchange with miner %d", i)
	}
	time.Sleep(time.Until(start.Add(spin)))
}

// floorConn is one miner's connection of the floor: its reader hands on every message the miner
// sends until the exchange is over (see done), and drops them after.
type floorConn struct {
	ws       *websocket.Conn
	messages chan floorMessage
	over     chan struct{}
	overOnce sync.Once
}

// floorMessage is a frame the miner sent: its message, or why it did not decode.
type floorMessage struct {
	msg protocol.Message
	err error
}

// done ends the exchange: the reader stops handing on messages.
func (c *floorConn) done() { c.overOnce.Do(func() { close(c.over) }) }

// offer sends each job's V0InitialJobRequest, answers each V0AcceptJobRequest with its
// JobAccepted receipt, and waits for every job's V0ExecutorReadyRequest, as the batch does.
func (c *floorConn) offer(minerHotkey string, key *hotkey.Keypair, jobs []floorJob, spin time.Duration) error {
	defer c.done()
	now := time.Now()
	for _, j := range jobs {
		if err := c.send(initialJobRequest(key, minerHotkey, j.uuid, benchClass, j.spec, spin, now)); err != nil {
			return err
		}
	}
	deadline := time.After(spin + 10*time.Second)
	for ready := 0; ready < len(jobs); {
		var got floorMessage
		select {
		case got = <-c.messages:
		case <-deadline:
			return fmt.Errorf("%d of %d executors ready when the exchange timed out", ready, len(jobs))
		}
		if got.err != nil {
			return got.err
		}
		switch m := got.msg.(type) {
		case *protocol.V0ExecutorManifestRequest: // the answer to the authentication
		case *protocol.V0AcceptJobRequest:
			if err := c.send(jobAcceptedReceipt(key, minerHotkey, m.JobUUID, time.Now())); err != nil {
				return err
			}
		case *protocol.V0ExecutorReadyRequest:
			ready++
		default:
			return fmt.Errorf("the miner sent %s during the exchange", m.MessageType())
		}
	}
	return nil
}

// send writes msg as the batch serialises it.
func (c *floorConn) send(msg protocol.Message) error {
	payload, err := protocol.Encode(msg)
	if err != nil {
		return err
	}
	return c.ws.WriteMessage(websocket.TextMessage, payload)
}

// waitArrivals waits until minersim has recorded the arrival of every job request in uuids
// since a unix ns instant, and returns those arrivals. It polls on the benchmark's goroutine,
// since reading the arrivals may fail it.
func (f *benchFleet) waitArrivals(b *testing.B, uuids map[string]bool, since int64) []minersim.Arrival {
	b.Helper()
	var got []minersim.Arrival
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got = got[:0]
		for _, a := range f.arrivals(b, "V0JobRequest", since) {
			if uuids[a.JobUUID] {
				got = append(got, a)
			}
		}
		if len(got) == len(uuids) {
			return got
		}
		require.False(b, time.Now().After(deadline), "%d of %d job requests arrived in 30 s", len(got), len(uuids))
	}
}

// dialAll opens and authenticates one connection per miner of the plan, each with a reader that
// decodes what the miner sends (the manifest, then the exchange's answers) onto its messages.
func dialAll(b *testing.B, plan Plan, key *hotkey.Keypair) []*floorConn {
	b.Helper()
	conns := make([]*floorConn, len(plan.Miners))
	errs := make([]error, len(plan.Miners))
	var wg sync.WaitGroup
	for i, m := range plan.Miners {
		wg.Go(func() {
			url := protocol.ValidatorInterfaceURL(m.IP, m.Port, key.Address())
			ws, resp, err := websocket.DefaultDialer.Dial(url, nil)
			if resp != nil && resp.Body != nil {
				_ = resp.Body.Close()
			}
			if err != nil {
				errs[i] = err
				return
			}
			// No pong: the reader would write it, and it could land between a raw write and
			// its remainder. The floor is over long before minersim misses one.
			ws.SetPingHandler(func(string) error { return nil })
			c := &floorConn{ws: ws, messages: make(chan floorMessage, 16), over: make(chan struct{})}
			conns[i] = c
			payload, err := protocol.Encode(protocol.NewValidatorAuth(key, m.Hotkey, time.Now()))
			if err == nil {
				err = ws.WriteMessage(websocket.TextMessage, payload)
			}
			errs[i] = err
			go c.read()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			closeFloor(conns)
			require.NoError(b, err, "floor connection to miner %d", i)
		}
	}
	time.Sleep(200 * time.Millisecond) // auth and manifest done
	return conns
}

// closeFloor closes the floor's connections, which ends their readers.
func closeFloor(conns []*floorConn) {
	for _, c := range conns {
		if c != nil {
			c.done()
			_ = c.ws.Close()
		}
	}
}

// read decodes the miner's frames onto messages until the connection closes or, once the
// exchange is over, drops them (the answers to the floor's job requests, its progress messages).
func (c *floorConn) read() {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		msg, err := protocol.DecodeFromMiner(data)
		select {
		case c.messages <- floorMessage{msg: msg, err: err}:
		case <-c.over:
		}
	}
}
