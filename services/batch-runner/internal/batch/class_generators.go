package batch

import (
	"fmt"
	"slices"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/synthetic"
)

// DefaultGenerators is the generator per executor class a deployment gets unless it says
// otherwise (BATCH_RUNNER_GENERATORS):
//
//   - GPU classes (spin_up-4min.gpu-24gb, always_on.gpu-24gb, always_on.llm.a6000) run hashcat,
//     upstream's synthetic job: it needs the GPU they have. (Upstream tests always_on.llm.a6000
//     with LLM prompt jobs, which Drover does not generate; hashcat runs on its A6000.)
//   - always_on.test and always_on.cpu.8c.16gb have no GPU: they run the proof-of-work job, a
//     CPU-only Python script, instead of a hashcat job they could only fail.
//   - "*" (any other known class) is hashcat; ForClasses skips a class among them without a GPU.
const DefaultGenerators = "*=hashcat,always_on.test=pow,always_on.cpu.8c.16gb=pow"

// ForClasses resolves g against the known classes so that no class gets a job it cannot run. A
// generator named for a class without a GPU that needs one is a configuration error. A class
// without a GPU that would get a GPU job only through "*" gets no generator (For returns nil):
// its executors are skipped with an event. The skipped classes are returned, sorted.
func (g Generators) ForClasses(table protocol.ClassTable) (Generators, []string, error) {
	out := Generators{}
	for class, gen := range g {
		out[class] = gen
		c, known := table.Lookup(class)
		if known && !c.GPU && synthetic.NeedsGPU(gen) {
			return nil, nil, fmt.Errorf("generator %s for class %s: its jobs need a GPU and %s has none", gen.Name(), class, class)
		}
	}
	var skipped []string
	for _, c := range table.Classes() {
		if _, named := g[c.Name]; named || c.GPU || !synthetic.NeedsGPU(g["*"]) {
			continue
		}
		out[c.Name] = nil
		skipped = append(skipped, c.Name)
	}
	slices.Sort(skipped)
	return out, skipped, nil
}
