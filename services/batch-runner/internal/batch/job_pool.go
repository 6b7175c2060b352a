package batch

import (
	"fmt"
	"io"
	"math"

	"drover.dev/computehorde/synthetic"
)

// Pair is one miner's executor class.
type Pair struct{ Miner, Class string }

// JobPool holds jobs generated before the batch knows its final size, keyed by the miner and class
// they were made for (a hashcat job embeds the miner's hotkey, so jobs are not interchangeable
// between miners).
type JobPool struct {
	jobs map[Pair][]synthetic.Job
	// Pregenerated counts every job generated in advance; Used and Extra are filled by Take.
	Pregenerated, Used, Extra int
}

// Pregenerate makes ceil(headroom × n) jobs for each pair of previous, the job counts of the
// previous batch: 120 % headroom, so that a normal batch needs no generation once
// manifests are in.
func Pregenerate(gens Generators, previous map[Pair]int, headroom float64, rnd io.Reader) (*JobPool, error) {
	p := &JobPool{jobs: map[Pair][]synthetic.Job{}}
	for pair, n := range previous {
		if gens.For(pair.Class) == nil {
			continue // no job this class can run: it is skipped when the batch assigns jobs
		}
		want := int(math.Ceil(float64(n) * headroom))
		for range want {
			job, err := gens.For(pair.Class).Generate(pair.Miner, pair.Class, rnd)
			if err != nil {
				return nil, fmt.Errorf("pregenerate job for %s/%s: %w", pair.Miner, pair.Class, err)
			}
			p.jobs[pair] = append(p.jobs[pair], job)
		}
		p.Pregenerated += want
	}
	return p, nil
}

// Take returns n jobs for the pair: pregenerated ones first, the rest generated now.
func (p *JobPool) Take(gens Generators, pair Pair, n int, rnd io.Reader) ([]synthetic.Job, error) {
	if p.jobs == nil {
		p.jobs = map[Pair][]synthetic.Job{}
	}
	have := p.jobs[pair]
	k := min(n, len(have))
	out := append([]synthetic.Job(nil), have[:k]...)
	p.jobs[pair] = have[k:]
	p.Used += k
	for len(out) < n {
		job, err := gens.For(pair.Class).Generate(pair.Miner, pair.Class, rnd)
		if err != nil {
			return nil, fmt.Errorf("generate job for %s/%s: %w", pair.Miner, pair.Class, err)
		}
		out = append(out, job)
		p.Extra++
	}
	return out, nil
}
