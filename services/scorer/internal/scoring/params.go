package scoring

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// HordeClass is the executor class scored with horde_score by default: the 4-minute spin-up GPU
// class, the only one upstream scored by horde size.
const HordeClass = "spin_up-4min.gpu-24gb"

// DefaultClassWeights are upstream's class weights. Classes are data: a class not listed weighs 0.
const DefaultClassWeights = "spin_up-4min.gpu-24gb=99,always_on.llm.a6000=1,always_on.test=0"

// Params holds every constant of the scoring. Upstream changed them through dynamic config; here
// they are configuration, so an operator can follow the subnet without a release.
type Params struct {
	// ClassWeights maps an executor class to its share w_c of the total score.
	ClassWeights map[string]float64

	// ExcusedScore is what a job excused by valid busy receipts scores (a completed job scores 1,
	// any other outcome 0).
	ExcusedScore float64

	// HordeClass is scored with horde_score(b; HordeAlpha, HordeBeta, HordeDelta).
	HordeClass string
	HordeAlpha float64
	HordeBeta  float64
	HordeDelta float64

	// DancingMultiplier multiplies the score of a miner whose weighted executor count changed by
	// DancingRatio or more between the two last peak batches, or that is missing from one of them.
	DancingMultiplier float64
	DancingRatio      float64

	// NonPeakPenalty multiplies the score, in a non-peak batch, of a miner that keeps less than
	// NonPeakMinRatio of its peak executors in some class.
	NonPeakPenalty  float64
	NonPeakMinRatio float64
}

// DefaultParams returns upstream's settings.
func DefaultParams() Params {
	weights, _ := ParseClassWeights(DefaultClassWeights)
	return Params{
		ClassWeights: weights, ExcusedScore: 1, HordeClass: HordeClass,
		HordeAlpha: 0, HordeBeta: 0, HordeDelta: 1,
		DancingMultiplier: 1.3, DancingRatio: 1.4,
		NonPeakPenalty: 0.8, NonPeakMinRatio: 0.1,
	}
}

// ParseClassWeights reads "class=weight,class=weight". Weights must be finite and non-negative.
func ParseClassWeights(s string) (map[string]float64, error) {
	weights := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		class, value, ok := strings.Cut(part, "=")
		class = strings.TrimSpace(class)
		if !ok || class == "" {
			return nil, fmt.Errorf("class weight %q: want class=weight", part)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || !finite(w) || w < 0 {
			return nil, fmt.Errorf("class weight %q: weight must be a finite number ≥ 0", part)
		}
		if _, dup := weights[class]; dup {
			return nil, fmt.Errorf("class weight %q: class given twice", part)
		}
		weights[class] = w
	}
	if len(weights) == 0 {
		return nil, errors.New("class weights: none given")
	}
	return weights, nil
}

// FormatClassWeights is the inverse of ParseClassWeights, classes in order.
func FormatClassWeights(weights map[string]float64) string {
	classes := make([]string, 0, len(weights))
	for c := range weights {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = c + "=" + strconv.FormatFloat(weights[c], 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Validate reports the first setting that would make scores meaningless.
func (p Params) Validate() error {
	checks := []struct {
		name string
		ok   bool
	}{
		{"class weights", len(p.ClassWeights) > 0},
		{"excused score (finite, ≥ 0)", finite(p.ExcusedScore) && p.ExcusedScore >= 0},
		{"horde class", p.HordeClass != ""},
		{"horde alpha, beta and delta (finite)", finite(p.HordeAlpha) && finite(p.HordeBeta) && finite(p.HordeDelta)},
		{"dancing multiplier (finite, > 0)", finite(p.DancingMultiplier) && p.DancingMultiplier > 0},
		{"dancing ratio (≥ 1)", finite(p.DancingRatio) && p.DancingRatio >= 1},
		{"non-peak penalty (finite, > 0)", finite(p.NonPeakPenalty) && p.NonPeakPenalty > 0},
		{"non-peak minimum ratio (0 to 1)", p.NonPeakMinRatio >= 0 && p.NonPeakMinRatio <= 1},
	}
	for _, c := range checks {
		if !c.ok {
			return fmt.Errorf("scoring parameters: bad %s", c.name)
		}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
