package batch

import (
	"context"
	"io"
	"maps"
	"strings"
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

func aliceKey(t testing.TB) *hotkey.Keypair {
	t.Helper()
	key, err := hotkey.FromURI("//Alice")
	require.NoError(t, err)
	return key
}

// setup starts fleet (minersim's defaults: //Alice is a known validator) and returns a batch
// config with spin-ups and timeouts short enough for tests.
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
		Generators: Generators{"*": synthetic.PoWGenerator{Range: 1 << 10, Limit: time.Second}},
		SpinUps:    map[string]time.Duration{"*": 400 * time.Millisecond},
		MinSpinUp:  50 * time.Millisecond,

		ManifestTimeout: time.Second, ReadyGrace: 400 * time.Millisecond, JobExtra: 300 * time.Millisecond,
		ReceiptTimeout: time.Second, WriteTimeout: time.Second,
	}
	return &testBundle{fleet: f, cfg: cfg, plan: planFor(f)}
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
