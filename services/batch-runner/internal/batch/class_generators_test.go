package batch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/synthetic"
	"drover.dev/services/batch-runner/internal/sysevent"
)

func TestGeneratorsForClasses(t *testing.T) {
	t.Parallel()
	table := protocol.DefaultClassTable()
	tests := []struct {
		name    string
		spec    string
		want    map[string]string // class → generator name, "" for none
		skipped []string
		wantErr string
	}{
		{"Default", DefaultGenerators, map[string]string{
			"spin_up-4min.gpu-24gb": synthetic.HashcatName, "always_on.gpu-24gb": synthetic.HashcatName, "always_on.llm.a6000": synthetic.HashcatName,
			"always_on.test": synthetic.PoWName, "always_on.cpu.8c.16gb": synthetic.PoWName, "always_on.unknown": synthetic.HashcatName,
		}, nil, ""},
		{"HashcatEverywhereSkipsCPUClasses", "*=hashcat", map[string]string{
			"always_on.gpu-24gb": synthetic.HashcatName, "always_on.llm.a6000": synthetic.HashcatName, "always_on.test": "", "always_on.cpu.8c.16gb": "",
		}, []string{"always_on.cpu.8c.16gb", "always_on.test"}, ""},
		{"PoWEverywhere", "*=pow", map[string]string{"always_on.gpu-24gb": synthetic.PoWName, "always_on.test": synthetic.PoWName}, nil, ""},
		{"HashcatNamedForACPUClass", "*=pow,always_on.cpu.8c.16gb=hashcat", nil, nil, "need a GPU and always_on.cpu.8c.16gb has none"},
		{"HashcatForAnUnknownClass", "*=pow,always_on.gpu-80gb=hashcat", map[string]string{"always_on.gpu-80gb": synthetic.HashcatName}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gens, err := ParseGenerators(tt.spec, synthetic.PoWGenerator{})
			require.NoError(t, err)
			resolved, skipped, err := gens.ForClasses(table)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.skipped, skipped)
			for class, want := range tt.want {
				gen := resolved.For(class)
				if want == "" {
					require.Nil(t, gen, class)
					continue
				}
				require.Equal(t, want, gen.Name(), class)
			}
		})
	}
	t.Run("NoKnownClassGetsAJobItCannotRun", func(t *testing.T) {
		t.Parallel()
		gens := Config{}.WithDefaults().Generators
		for _, c := range table.Classes() {
			gen := gens.For(c.Name)
			require.NotNil(t, gen, "every known class has a default job: %s", c.Name)
			require.False(t, synthetic.NeedsGPU(gen) && !c.GPU, "%s has no GPU but would get %s", c.Name, gen.Name())
		}
	})
}

// gpuPoW is a proof-of-work job that claims to need a GPU, standing in for hashcat, which the
// simulated miners cannot solve.
type gpuPoW struct{ synthetic.PoWGenerator }

func (gpuPoW) NeedsGPU() bool { return true }

// TestRunSkipsClassesWithoutASuitableJob runs a batch where a GPU-only job is the default: the
// GPU class is tested, the CPU class is not sent a job and each miner's CPU executors are
// reported with an event.
func TestRunSkipsClassesWithoutASuitableJob(t *testing.T) {
	t.Parallel()
	b := setup(t, minersim.Config{Miners: 2, Manifest: protocol.Manifest{
		{Class: "always_on.gpu-24gb", Count: 1}, {Class: "always_on.test", Count: 2},
	}})
	gens, skipped, err := Generators{"*": gpuPoW{synthetic.PoWGenerator{Range: 1 << 10, Limit: testLimit}}}.ForClasses(protocol.DefaultClassTable())
	require.NoError(t, err)
	require.Equal(t, []string{"always_on.cpu.8c.16gb", "always_on.test"}, skipped)
	b.cfg.Generators = gens
	res := b.run(t)

	require.Len(t, res.Jobs, 2, "one GPU executor per miner")
	for _, j := range res.Jobs {
		require.Equal(t, "always_on.gpu-24gb", j.Class)
	}
	require.Equal(t, map[Outcome]int{OutcomeCompleted: 2}, outcomes(res), jobsReport(res))
	require.Equal(t, 2, eventCount(res, sysevent.NoSuitableGenerator))
	for _, e := range res.Events {
		if e.Subtype == sysevent.NoSuitableGenerator {
			require.Equal(t, sysevent.TypeExecutorClipped, e.Type)
			require.Contains(t, string(e.Data), `"executor_class":"always_on.test"`)
		}
	}
}
