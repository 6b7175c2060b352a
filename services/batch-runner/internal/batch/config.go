// Package batch runs phase 2 of a synthetic batch: everything between creating the batch row and
// writing its results. It talks to miners and nothing else; it has no database handle in scope,
// so the rule "no database access while talking to miners" holds by construction (a test
// checks the package's imports).
//
// Stages, in order: manifests from every miner concurrently; the final job
// count and any extra generation; the availability check, staggered by executor class spin-up
// between two rendezvous; the hot phase, where every V0JobRequest frame is built in advance and
// one gate releases every connection's writer at once; verdicts; JobFinished receipts.
package batch

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/computehorde/synthetic"
)

// Config is how batches run. Durations that upstream fixed are configuration here, so tests and
// local runs can use short spin-ups.
type Config struct {
	// Key is the validator hotkey that authenticates and signs receipts.
	Key *hotkey.Keypair
	// Classes knows each executor class's spin-up; a class a miner lists that it does not know
	// is skipped with an event.
	Classes protocol.ClassTable
	// SpinUps overrides class spin-ups by name ("*" for every class).
	SpinUps map[string]time.Duration
	// MinSpinUp is the floor of every spin-up in the stagger (upstream: 2 s).
	MinSpinUp time.Duration
	// ClassCaps caps the executors tested per miner and class.
	ClassCaps map[string]int
	// Generators builds each class's jobs.
	Generators Generators

	ManifestTimeout time.Duration // per miner: connect, auth, manifest
	ReadyGrace      time.Duration // how long after the spin-up a ready message may still come
	JobExtra        time.Duration // waited beyond a job's time limit, to record slow answers
	ReceiptTimeout  time.Duration // for the JobFinished receipts
	WriteTimeout    time.Duration // every write to a miner
	SlowSend        time.Duration // a hot-phase send longer than this is an event
	MaxFrameSize    int64

	// ExcuseMinStake is the stake a validator needs for its receipts to excuse a busy miner.
	ExcuseMinStake float64

	// Rand feeds job generation and the shuffles; nil means crypto/rand.
	Rand io.Reader
}

// WithDefaults fills zero fields with upstream's values.
func (c Config) WithDefaults() Config {
	if c.Classes.Classes() == nil {
		c.Classes = protocol.DefaultClassTable()
	}
	if c.MinSpinUp == 0 {
		c.MinSpinUp = 2 * time.Second
	}
	if c.ClassCaps == nil {
		c.ClassCaps = map[string]int{"always_on.llm.a6000": 100}
	}
	if c.Generators == nil {
		gens, err := ParseGenerators(DefaultGenerators, synthetic.PoWGenerator{})
		if err == nil {
			gens, _, err = gens.ForClasses(c.Classes)
		}
		if err != nil {
			panic("default generators: " + err.Error()) // unreachable: tested
		}
		c.Generators = gens
	}
	setDefault(&c.ManifestTimeout, 30*time.Second)
	setDefault(&c.ReadyGrace, 10*time.Second)
	setDefault(&c.JobExtra, 120*time.Second)
	setDefault(&c.ReceiptTimeout, 5*time.Second)
	setDefault(&c.WriteTimeout, 5*time.Second)
	setDefault(&c.SlowSend, 100*time.Millisecond)
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = protocol.DefaultMaxFrameSize
	}
	if c.ExcuseMinStake == 0 {
		c.ExcuseMinStake = receipts.DefaultMinExcuseStake
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	return c
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

// spinUp is a class's spin-up for the stagger, with overrides and the floor applied.
func (c Config) spinUp(class string) (time.Duration, bool) {
	d, ok := c.SpinUps[class]
	if !ok {
		ec, known := c.Classes.Lookup(class)
		if !known {
			return 0, false
		}
		d = ec.SpinUp
		if all, ok := c.SpinUps["*"]; ok {
			d = all
		}
	}
	return max(d, c.MinSpinUp), true
}

// Generators maps an executor class to the generator of its jobs; "*" covers the rest. A class
// mapped to nil has no job it can run (see ForClasses) and is not tested.
type Generators map[string]synthetic.Generator

// For returns the generator of class; nil when the class has none it can run.
func (g Generators) For(class string) synthetic.Generator {
	if gen, ok := g[class]; ok {
		return gen
	}
	return g["*"]
}

// ParseGenerators reads "pow" or "*=pow,spin_up-4min.gpu-24gb=hashcat". pow is the generator
// pow (its zero fields: the synthetic package defaults).
func ParseGenerators(spec string, pow synthetic.PoWGenerator) (Generators, error) {
	out := Generators{}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		class, name, ok := strings.Cut(part, "=")
		if !ok {
			class, name = "*", part
		}
		switch name {
		case "pow":
			out[class] = pow
		case "hashcat":
			out[class] = synthetic.HashcatGenerator{}
		default:
			return nil, fmt.Errorf("generator %q for class %q: want pow or hashcat", name, class)
		}
	}
	if out["*"] == nil {
		return nil, fmt.Errorf("generators %q: no default (\"*=...\")", spec)
	}
	return out, nil
}
