package scoring

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// MaxCount bounds every count in a result: far above any real miner, low enough that sums stay
// exact in float64.
const MaxCount = 1_000_000

// Result is how one miner's executors of one class fared in a batch.
type Result struct {
	Hotkey        string
	ExecutorClass string
	Executors     int // declared by the manifest
	Completed     int
	Excused       int
	Failed        int
}

// Batch is what Score needs of a batch.
type Batch struct {
	Peak    bool
	Results []Result
}

// Counts maps hotkey → executor class → executors declared in one batch.
type Counts map[string]map[string]int

// History holds the executor counts of the two last peak batches as of the batch being scored
// (CurrPeak is the batch itself when it is a peak batch). Nil means there was no such batch.
type History struct {
	CurrPeak Counts
	PrevPeak Counts
}

// CountsOf returns the executor counts of results.
func CountsOf(results []Result) Counts {
	c := Counts{}
	for _, r := range results {
		if c[r.Hotkey] == nil {
			c[r.Hotkey] = map[string]int{}
		}
		c[r.Hotkey][r.ExecutorClass] += r.Executors
	}
	return c
}

// Validate reports the first result that cannot be scored: an empty hotkey or class, a count out
// of range, or a (hotkey, class) pair given twice. Retrying cannot fix any of them.
func Validate(results []Result) error {
	seen := make(map[[2]string]bool, len(results))
	for i, r := range results {
		switch {
		case r.Hotkey == "" || len(r.Hotkey) > 64:
			return fmt.Errorf("miners[%d].hotkey: must be 1 to 64 characters", i)
		case r.ExecutorClass == "" || len(r.ExecutorClass) > 128:
			return fmt.Errorf("miners[%d].executor_class: must be 1 to 128 characters", i)
		case !inRange(r.Executors) || !inRange(r.Completed) || !inRange(r.Excused) || !inRange(r.Failed):
			return fmt.Errorf("miners[%d]: counts must be 0 to %d", i, MaxCount)
		case seen[[2]string{r.Hotkey, r.ExecutorClass}]:
			return fmt.Errorf("miners[%d]: %s / %s given twice", i, r.Hotkey, r.ExecutorClass)
		}
		seen[[2]string{r.Hotkey, r.ExecutorClass}] = true
	}
	return nil
}

func inRange(n int) bool { return n >= 0 && n <= MaxCount }

// ClassScore is a miner's score in one executor class.
type ClassScore struct {
	Hotkey        string
	ExecutorClass string
	ClassWeight   float64
	Raw           float64 // Σ job scores, or horde_score for the horde class
	Normalised    float64 // ClassWeight · Raw / Σ Raw over the class's miners
}

// MinerScore is a miner's score in the batch and the weight it earns.
type MinerScore struct {
	Hotkey    string
	Base      float64 // Σ over classes of ClassScore.Normalised
	Dancing   float64 // multiplier: 1 or Params.DancingMultiplier
	NonPeak   float64 // multiplier: 1 or Params.NonPeakPenalty
	Score     float64 // Base · Dancing · NonPeak
	Weight    float64 // Score / Σ Score; all 0 when every score is 0
	WeightU16 int     // Weight as integers summing to 65535 (0 when every score is 0)
}

// Outcome is a scored batch. Rows are sorted by hotkey, then class.
type Outcome struct {
	Classes []ClassScore
	Miners  []MinerScore

	// UnknownClasses lists the classes the batch had that Params gives no weight: they score 0.
	UnknownClasses []string
}

// Score scores a valid batch (see Validate).
func Score(b Batch, h History, p Params) Outcome {
	var out Outcome
	out.Classes, out.UnknownClasses = classScores(b.Results, p)
	base := map[string]float64{}
	for _, cs := range out.Classes {
		base[cs.Hotkey] += cs.Normalised
	}
	current := CountsOf(b.Results)
	for _, hotkey := range slices.Sorted(maps.Keys(base)) {
		m := MinerScore{Hotkey: hotkey, Base: base[hotkey]}
		m.Dancing = dancing(hotkey, h, p)
		m.NonPeak = 1
		if !b.Peak {
			m.NonPeak = nonPeak(h.CurrPeak[hotkey], current[hotkey], p)
		}
		m.Score = m.Base * m.Dancing * m.NonPeak
		out.Miners = append(out.Miners, m)
	}
	setWeights(out.Miners)
	return out
}

// classScores computes raw and normalised scores per class, in hotkey then class order.
func classScores(results []Result, p Params) ([]ClassScore, []string) {
	sorted := append([]Result(nil), results...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Hotkey != sorted[j].Hotkey {
			return sorted[i].Hotkey < sorted[j].Hotkey
		}
		return sorted[i].ExecutorClass < sorted[j].ExecutorClass
	})
	total := map[string]float64{}
	unknown := map[string]bool{}
	scores := make([]ClassScore, len(sorted))
	for i, r := range sorted {
		w, known := p.ClassWeights[r.ExecutorClass]
		if !known {
			unknown[r.ExecutorClass] = true
		}
		scores[i] = ClassScore{Hotkey: r.Hotkey, ExecutorClass: r.ExecutorClass, ClassWeight: w, Raw: raw(r, p)}
		total[r.ExecutorClass] += scores[i].Raw
	}
	for i := range scores {
		if t := total[scores[i].ExecutorClass]; t > 0 {
			scores[i].Normalised = scores[i].ClassWeight * scores[i].Raw / t
		}
	}
	return scores, slices.Sorted(maps.Keys(unknown))
}

// raw is Σ job scores (completed 1, excused ExcusedScore, failed 0), or horde_score of them.
func raw(r Result, p Params) float64 {
	sum := float64(r.Completed) + float64(r.Excused)*p.ExcusedScore
	if r.ExecutorClass == p.HordeClass {
		return HordeScore(sum, r.Completed+r.Excused+r.Failed, p.HordeAlpha, p.HordeBeta, p.HordeDelta)
	}
	return sum
}
