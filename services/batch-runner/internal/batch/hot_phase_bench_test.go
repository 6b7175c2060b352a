package batch

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/synthetic"
	"drover.dev/services/batch-runner/internal/barrier"
	"drover.dev/services/batch-runner/internal/minerconn"
)

// BenchmarkHotPhase runs whole batches against minersim and reports the hot phase's fairness
// next to a floor measured in the same run: one goroutine writing the same prepared frames to
// the same miners' connections from one release. Sizes come from BENCH_EXECUTORS (default
// "1000,5000") and BENCH_PER_MINER (executors per miner, default 10). Run with -benchtime 1x.
func BenchmarkHotPhase(b *testing.B) {
	raiseFileLimit(b)
	perMiner := envInt(b, "BENCH_PER_MINER", 10)
	for _, n := range envInts(b, "BENCH_EXECUTORS", []int{1000, 5000}) {
		b.Run(fmt.Sprintf("executors=%d", n), func(b *testing.B) {
			for b.Loop() {
				hotPhaseOnce(b, n, perMiner)
			}
		})
	}
}

const answerDelay = 200 * time.Millisecond

func hotPhaseOnce(b *testing.B, executors, perMiner int) {
	miners := (executors + perMiner - 1) / perMiner
	bundle := setup(b, minersim.Config{
		Miners: miners, Manifest: manifestOf("always_on.test", perMiner), SpinUp: 50 * time.Millisecond,
		// Every executor answers answerDelay after its job arrives, so all answers land together.
		Scenario: minersim.Scenario{Default: minersim.Behaviour{Answer: minersim.AnswerScripted, Stdout: "x", AnswerDelay: dur(answerDelay)}},
	})
	bundle.cfg.SpinUps = map[string]time.Duration{"*": 3 * time.Second}
	bundle.cfg.ManifestTimeout, bundle.cfg.ReadyGrace = 20*time.Second, 5*time.Second
	bundle.cfg.JobExtra, bundle.cfg.ReceiptTimeout, bundle.cfg.WriteTimeout = 2*time.Second, 10*time.Second, 5*time.Second
	res, err := Run(context.Background(), bundle.cfg, bundle.plan)
	require.NoError(b, err)
	arrivals := bundle.fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0JobRequest"})
	require.Len(b, arrivals, executors, "every executor got its job")
	oursArrival := arrivalSpread(arrivals)
	p50, p99 := completionError(res, arrivals)

	floorSend, floorArrival := floor(b, bundle, perMiner)
	ratio := float64(res.SendSpread) / float64(floorSend)
	report(b, executors, map[string]float64{
		"send_spread_us": us(res.SendSpread), "arrival_spread_us": us(oursArrival),
		"floor_send_spread_us": us(floorSend), "floor_arrival_spread_us": us(floorArrival),
		"ratio_send_ours/floor": ratio, "ratio_arrival_ours/floor": float64(oursArrival) / float64(floorArrival),
		"completion_err_p50_us": us(p50), "completion_err_p99_us": us(p99),
		"completion_err_p99/floor_send": float64(p99) / float64(floorSend),
		"peak_rss_MiB_process":          peakRSSMiB(),
	})
}

func report(b *testing.B, executors int, figures map[string]float64) {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range figures {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		fmt.Printf("hot-phase executors=%d %-32s %12.2f\n", executors, name, figures[name])
		b.ReportMetric(figures[name], strings.ReplaceAll(name, "/", "_per_"))
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func arrivalSpread(as []minersim.Arrival) time.Duration {
	lo, hi := as[0].UnixNano, as[0].UnixNano
	for _, a := range as {
		lo, hi = min(lo, a.UnixNano), max(hi, a.UnixNano)
	}
	return time.Duration(hi - lo)
}

// completionError is our recorded end time minus the miner's send time. minersim does not record
// when it sends an answer, so the send time is estimated as the job's arrival plus the scripted
// answer delay: the figure includes minersim's timer lateness, and so is an upper bound.
func completionError(res *Result, arrivals []minersim.Arrival) (p50, p99 time.Duration) {
	arrived := map[string]int64{}
	for _, a := range arrivals {
		arrived[a.JobUUID] = a.UnixNano
	}
	var errs []time.Duration
	for _, j := range res.Jobs {
		at, ok := arrived[j.UUID]
		if !ok || j.EndAt.IsZero() {
			continue
		}
		errs = append(errs, j.EndAt.Sub(time.Unix(0, at).Add(answerDelay)))
	}
	if len(errs) == 0 {
		return 0, 0
	}
	slices.Sort(errs)
	return errs[len(errs)/2], errs[len(errs)*99/100]
}

// floor opens one connection per miner, authenticates, then has one goroutine, parked on a
// gate, write each miner's prepared frames (perMiner V0JobRequests, as the batch did) in a bare
// loop once the gate opens.
func floor(b *testing.B, bundle *testBundle, perMiner int) (send, arrival time.Duration) {
	conns := dialAll(b, bundle)
	frames := make([][]byte, len(conns))
	uuids := map[string]bool{}
	for i := range conns {
		for range perMiner {
			spec, err := synthetic.PoWGenerator{Range: 1 << 10}.Generate(bundle.plan.Miners[i].Hotkey, "always_on.test", bundle.cfg.WithDefaults().Rand)
			require.NoError(b, err)
			uuid, err := newUUID(bundle.cfg.WithDefaults().Rand)
			require.NoError(b, err)
			uuids[uuid] = true
			payload, err := protocol.Encode(jobRequest(&job{uuid: uuid, class: "always_on.test", spec: spec}))
			require.NoError(b, err)
			frames[i] = append(frames[i], minerconn.MaskedFrame(payload)...)
		}
	}
	gate := barrier.NewGate()
	before, after := make([]time.Time, len(conns)), make([]time.Time, len(conns))
	done := make(chan struct{})
	go func() {
		<-gate.Done()
		for i, c := range conns {
			before[i] = time.Now()
			_, _ = c.NetConn().Write(frames[i])
			after[i] = time.Now()
		}
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	release := gate.Open()
	<-done
	send = slices.MaxFunc(after, func(a, b time.Time) int { return a.Compare(b) }).Sub(slices.MinFunc(before, func(a, b time.Time) int { return a.Compare(b) }))
	var got []minersim.Arrival
	require.Eventually(b, func() bool {
		got = got[:0]
		for _, a := range bundle.fleet.ArrivalsWhere(minersim.ArrivalFilter{SinceNano: release.UnixNano()}) {
			if uuids[a.JobUUID] {
				got = append(got, a)
			}
		}
		return len(got) == len(uuids)
	}, 10*time.Second, 10*time.Millisecond)
	for _, c := range conns {
		_ = c.Close()
	}
	return send, arrivalSpread(got)
}

func dialAll(b *testing.B, bundle *testBundle) []*websocket.Conn {
	conns := make([]*websocket.Conn, len(bundle.plan.Miners))
	var wg sync.WaitGroup
	for i, m := range bundle.plan.Miners {
		wg.Go(func() {
			url := protocol.ValidatorInterfaceURL(m.IP, m.Port, bundle.cfg.Key.Address())
			c, _, err := websocket.DefaultDialer.Dial(url, nil)
			if err != nil {
				return
			}
			payload, _ := protocol.Encode(protocol.NewValidatorAuth(bundle.cfg.Key, m.Hotkey, time.Now()))
			_ = c.WriteMessage(websocket.TextMessage, payload)
			go func() { // drain: the manifest, pings
				for {
					if _, _, err := c.ReadMessage(); err != nil {
						return
					}
				}
			}()
			conns[i] = c
		})
	}
	wg.Wait()
	for _, c := range conns {
		require.NotNil(b, c, "floor connection")
	}
	time.Sleep(200 * time.Millisecond) // auth and manifest done
	return conns
}

func peakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
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

func raiseFileLimit(b *testing.B) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

func envInt(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, name)
		return n
	}
	return def
}

func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for part := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		require.NoError(b, err, name)
		out = append(out, n)
	}
	return out
}
