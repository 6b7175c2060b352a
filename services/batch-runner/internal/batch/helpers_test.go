package batch

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/computehorde/synthetic"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// testBundle is a simulated fleet and a batch configured against it with short timings.
type testBundle struct {
	fleet *minersim.Fleet
	cfg   Config
	plan  Plan
}

// alice derives //Alice's key once for the package: a derivation takes a tenth of a second of
// CPU under -race, and the tests that start together would each spend it at once.
var alice = sync.OnceValues(func() (*hotkey.Keypair, error) { return hotkey.FromURI("//Alice") })

func aliceKey(t testing.TB) *hotkey.Keypair {
	t.Helper()
	key, err := alice()
	require.NoError(t, err)
	return key
}

// The test config's bounds. A bound that a test does not assert is missed is generous, because
// the honest side of every test must beat it on a loaded 2-core -race run: there a miner's
// accept came up to ~400 ms after the offer (with the old 400 ms spin-up, 4 runs in 40 of the
// nine-miner and ten-executor tests lost a job) and a manifest up to ~1.5 s after the dial
// (which missed the old 1 s ManifestTimeout). Only the spin-up is slept in full; the other bounds
// cap waits that end as soon as the miner answers, so they cost nothing unless a test's miner
// stays silent, and such a test shortens the bound it asserts (quickReady, quickAnswer).
const (
	testSpinUp   = 2 * time.Second
	testLimit    = 3 * time.Second
	testJobExtra = 2 * time.Second
)

// setup starts fleet (minersim's defaults: //Alice is a known validator) and returns a batch
// config whose spin-up is short enough for tests and whose bounds are generous (see testSpinUp).
func setup(t testing.TB, fleet minersim.Config) *testBundle {
	t.Helper()
	if fleet.SpinUp == 0 {
		fleet.SpinUp = 20 * time.Millisecond
	}
	f, err := minersim.Start(context.Background(), fleet)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	cfg := Config{
		Key:        aliceKey(t),
		Generators: Generators{"*": synthetic.PoWGenerator{Range: 1 << 10, Limit: testLimit}},
		SpinUps:    map[string]time.Duration{"*": testSpinUp},
		MinSpinUp:  50 * time.Millisecond,

		ManifestTimeout: 5 * time.Second, ReadyGrace: 2 * time.Second, JobExtra: testJobExtra,
		ReceiptTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
	}
	return &testBundle{fleet: f, cfg: cfg, plan: planFor(f)}
}

// quickReady shortens ReadyGrace, for a case whose miner never sends a ready message: the
// accept, the honest side, still has the whole spin-up.
func quickReady(c *Config) { c.ReadyGrace = 400 * time.Millisecond }

// quickAnswer shortens the time limit and JobExtra, for a case whose miner never answers: the
// accept and the ready message, the honest side, still have setup's bounds.
func quickAnswer(c *Config) {
	c.Generators = Generators{"*": synthetic.PoWGenerator{Range: 1 << 10, Limit: time.Second}}
	c.JobExtra = 300 * time.Millisecond
}

// planFor lists the fleet's miners and its metagraph's validators.
func planFor(f *minersim.Fleet) Plan {
	plan := Plan{BatchID: 1, Validators: map[string]receipts.Validator{}, Events: sysevent.New(nil)}
	for _, m := range f.Miners() {
		plan.Miners = append(plan.Miners, Miner{Hotkey: m.Hotkey, IP: m.IP, Port: m.Port})
	}
	for _, n := range f.Metagraph().Miners {
		if n.IP == "0.0.0.0" || n.Validator {
			plan.Validators[n.Hotkey] = receipts.Validator{Stake: n.Stake, Active: n.Validator}
		}
	}
	return plan
}

func (b *testBundle) run(t testing.TB) *Result {
	t.Helper()
	res, err := Run(context.Background(), b.cfg, b.plan)
	require.NoError(t, err)
	res.Events = append(res.Events, b.plan.Events.Drain()...)
	requireCleanWire(t, b.fleet)
	return res
}

// requireCleanWire checks every frame the validator sent against minersim's own decoder.
func requireCleanWire(t testing.TB, f *minersim.Fleet) {
	t.Helper()
	arrivals := f.Arrivals()
	require.NotEmpty(t, arrivals)
	for _, a := range arrivals {
		require.Empty(t, a.DecodeError, "miner %d refused our %s frame", a.Miner, a.MessageType)
	}
}

func outcomes(res *Result) map[Outcome]int {
	out := map[Outcome]int{}
	for _, j := range res.Jobs {
		out[j.Outcome]++
	}
	return out
}

func reasons(res *Result) map[Reason]int {
	out := map[Reason]int{}
	for _, j := range res.Jobs {
		out[j.Reason]++
	}
	return out
}

func eventCount(res *Result, subtype sysevent.Subtype) int {
	n := 0
	for _, e := range res.Events {
		if e.Subtype == subtype {
			n++
		}
	}
	return n
}

func manifestOf(class string, n int) protocol.Manifest {
	return protocol.Manifest{{Class: class, Count: n}}
}

// paddedPoW is a proof-of-work job whose request, for miner only, carries pad bytes of
// environment: big enough to fill a socket that is not read.
type paddedPoW struct {
	limit time.Duration
	pad   int
	miner string
}

func (p paddedPoW) Name() string             { return synthetic.PoWName }
func (p paddedPoW) TimeLimit() time.Duration { return p.limit }

func (p paddedPoW) Generate(miner, class string, rnd io.Reader) (synthetic.Job, error) {
	job, err := synthetic.PoWGenerator{Range: 1 << 10, Limit: p.limit}.Generate(miner, class, rnd)
	if err != nil || miner != p.miner {
		return job, err
	}
	env := map[string]string{"PAD": strings.Repeat("p", p.pad)}
	maps.Copy(env, job.Request.Env)
	job.Request.Env = env
	return job, nil
}

// jobsReport describes every job for a failure message: its verdict and when each step happened,
// relative to the start of the availability stage, so a failure says which deadline was missed
// (an accept is due by the spin-up, a ready message ReadyGrace later).
func jobsReport(res *Result) string {
	var t0 time.Time
	var b strings.Builder
	for _, s := range res.Stages {
		if s.Name == "availability" {
			t0 = s.StartedAt
		}
	}
	at := func(t time.Time) string {
		if t.IsZero() || t0.IsZero() {
			return "-"
		}
		return t.Sub(t0).Round(time.Millisecond).String()
	}
	for _, s := range res.Stages {
		fmt.Fprintf(&b, "\nstage %s %s..%s", s.Name, at(s.StartedAt), at(s.FinishedAt))
	}
	for _, j := range res.Jobs {
		fmt.Fprintf(&b, "\n%.8s %s %s/%s %q: offered %s response %s ready %s send %s..%s end %s took %v limit %v",
			j.Miner, j.Class, j.Outcome, j.Reason, j.Detail, at(j.InitialSentAt), at(j.ResponseAt),
			at(j.ReadyAt), at(j.BeforeSend), at(j.AfterSend), at(j.EndAt), j.TimeTook.Round(time.Millisecond), j.TimeLimit)
	}
	return b.String()
}
