package scoring

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const llm = "always_on.llm.a6000"

// steady is a history in which both miners of the tests had the same executors at both peaks,
// so no dancing bonus applies.
var steady = History{
	CurrPeak: Counts{"A": {llm: 4}, "B": {llm: 1}},
	PrevPeak: Counts{"A": {llm: 4}, "B": {llm: 1}},
}

func TestScore(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		batch   Batch
		history History
		params  func(*Params)
		want    []MinerScore
		classes []ClassScore // checked when not nil
	}{
		{
			// A: 3 of 4 completed → 3; B: 1 → 1. Class weight 1: A 3/4, B 1/4. u16: 49151.25 and
			// 16383.75 floor to 49151 + 16383 = 65534; the one left goes to B (larger remainder).
			name:    "SumOfJobScoresNormalisedInClass",
			batch:   Batch{Peak: true, Results: []Result{{"A", llm, 4, 3, 0, 1}, {"B", llm, 1, 1, 0, 0}}},
			history: steady,
			want: []MinerScore{
				{Hotkey: "A", Base: 0.75, Dancing: 1, NonPeak: 1, Score: 0.75, Weight: 0.75, WeightU16: 49151},
				{Hotkey: "B", Base: 0.25, Dancing: 1, NonPeak: 1, Score: 0.25, Weight: 0.25, WeightU16: 16384},
			},
			classes: []ClassScore{
				{Hotkey: "A", ExecutorClass: llm, ClassWeight: 1, Raw: 3, Normalised: 0.75},
				{Hotkey: "B", ExecutorClass: llm, ClassWeight: 1, Raw: 1, Normalised: 0.25},
			},
		},
		{
			// Horde class (w 99), excused score 0.5. A: horde_score(1; n 1) = 0.5. B: completed 1 +
			// excused 1 → Σb 1.5, n 2, σ(2) = 0.62245933 → 0.93368900. Class total 1.43368900:
			// A 99·0.5/1.433689 = 34.52631645, B 64.47368355; B also alone in llm (w 1) → +1.
			// Total 100. u16: 22626.82 → 22626, 42908.18 → 42908; the one left goes to A.
			name: "HordeClassAndExcusedScore",
			batch: Batch{Peak: true, Results: []Result{
				{"A", HordeClass, 1, 1, 0, 0}, {"B", HordeClass, 2, 1, 1, 0}, {"B", llm, 2, 2, 0, 0},
			}},
			history: History{
				CurrPeak: Counts{"A": {HordeClass: 1}, "B": {HordeClass: 2, llm: 2}},
				PrevPeak: Counts{"A": {HordeClass: 1}, "B": {HordeClass: 2, llm: 2}},
			},
			params: func(p *Params) { p.ExcusedScore = 0.5 },
			want: []MinerScore{
				{Hotkey: "A", Base: 34.52631645, Dancing: 1, NonPeak: 1, Score: 34.52631645, Weight: 0.34526316, WeightU16: 22627},
				{Hotkey: "B", Base: 65.47368355, Dancing: 1, NonPeak: 1, Score: 65.47368355, Weight: 0.65473684, WeightU16: 42908},
			},
		},
		{
			// A is missing from the previous peak → ×1.3: 0.75 → 0.975; total 1.225.
			// Weights 0.975/1.225 = 0.79591837 and 0.20408163; u16 52160.51 → 52160 and
			// 13374.49 → 13374; the one left goes to A.
			name:  "DancingBonusWhenMissingFromAPeak",
			batch: Batch{Peak: true, Results: []Result{{"A", llm, 4, 3, 0, 1}, {"B", llm, 1, 1, 0, 0}}},
			history: History{
				CurrPeak: Counts{"A": {llm: 4}, "B": {llm: 1}},
				PrevPeak: Counts{"B": {llm: 1}},
			},
			want: []MinerScore{
				{Hotkey: "A", Base: 0.75, Dancing: 1.3, NonPeak: 1, Score: 0.975, Weight: 0.79591837, WeightU16: 52161},
				{Hotkey: "B", Base: 0.25, Dancing: 1, NonPeak: 1, Score: 0.25, Weight: 0.20408163, WeightU16: 13374},
			},
		},
		{
			// Non-peak batch: A had 50 executors at the peak and keeps 4 (0.08 < 0.1) → ×0.8:
			// 0.75 → 0.6. B keeps 1 of 1. Total 0.85: weights 12/17 = 0.70588235 and
			// 5/17 = 0.29411765; u16 65535·12/17 = 46260 and 65535·5/17 = 19275 exactly.
			name:  "NonPeakPenaltyBelowTenPercent",
			batch: Batch{Peak: false, Results: []Result{{"A", llm, 4, 3, 0, 1}, {"B", llm, 1, 1, 0, 0}}},
			history: History{
				CurrPeak: Counts{"A": {llm: 50}, "B": {llm: 1}},
				PrevPeak: Counts{"A": {llm: 50}, "B": {llm: 1}},
			},
			want: []MinerScore{
				{Hotkey: "A", Base: 0.75, Dancing: 1, NonPeak: 0.8, Score: 0.6, Weight: 0.70588235, WeightU16: 46260},
				{Hotkey: "B", Base: 0.25, Dancing: 1, NonPeak: 1, Score: 0.25, Weight: 0.29411765, WeightU16: 19275},
			},
		},
		{
			// 0 weight everywhere: nothing to set, every weight 0.
			name:    "UnknownClassWeighsZero",
			batch:   Batch{Peak: true, Results: []Result{{"A", "gpu-future", 2, 2, 0, 0}}},
			history: History{CurrPeak: Counts{"A": {"gpu-future": 2}}, PrevPeak: Counts{"A": {"gpu-future": 2}}},
			want:    []MinerScore{{Hotkey: "A", Base: 0, Dancing: 1.3, NonPeak: 1, Score: 0, Weight: 0, WeightU16: 0}},
			classes: []ClassScore{{Hotkey: "A", ExecutorClass: "gpu-future", ClassWeight: 0, Raw: 2, Normalised: 0}},
		},
		{
			name:  "NoMiners",
			batch: Batch{Peak: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := DefaultParams()
			if tt.params != nil {
				tt.params(&p)
			}
			got := Score(tt.batch, tt.history, p)
			require.Len(t, got.Miners, len(tt.want))
			total := 0
			for i, w := range tt.want {
				m := got.Miners[i]
				require.Equal(t, w.Hotkey, m.Hotkey)
				require.InDelta(t, w.Base, m.Base, 1e-7, w.Hotkey)
				require.InDelta(t, w.Dancing, m.Dancing, 1e-12, w.Hotkey)
				require.InDelta(t, w.NonPeak, m.NonPeak, 1e-12, w.Hotkey)
				require.InDelta(t, w.Score, m.Score, 1e-7, w.Hotkey)
				require.InDelta(t, w.Weight, m.Weight, 1e-8, w.Hotkey)
				require.Equal(t, w.WeightU16, m.WeightU16, w.Hotkey)
				total += m.WeightU16
			}
			if total > 0 {
				require.Equal(t, U16Total, total)
			}
			if tt.classes != nil {
				require.Equal(t, tt.classes, got.Classes)
			}
		})
	}
}

func TestScoreReportsUnknownClasses(t *testing.T) {
	t.Parallel()

	got := Score(Batch{Results: []Result{{"A", "x", 1, 1, 0, 0}, {"B", "x", 1, 1, 0, 0}, {"A", llm, 1, 1, 0, 0}}}, History{}, DefaultParams())
	require.Equal(t, []string{"x"}, got.UnknownClasses)
}

func TestDancing(t *testing.T) {
	t.Parallel()

	horde := func(n int) map[string]int { return map[string]int{HordeClass: n} }
	tests := []struct {
		name       string
		prev, curr map[string]int // nil: missing from that peak
		want       float64
	}{
		{"Steady", horde(10), horde(10), 1},
		{"GrewBelowRatio", horde(10), horde(13), 1},  // 1287 / 990 = 1.3
		{"GrewByRatio", horde(10), horde(14), 1.3},   // 1386 / 990 = 1.4 ≥ 1.4
		{"ShrankByRatio", horde(14), horde(10), 1.3}, // the ratio is high / low
		{"MissingFromPrevious", nil, horde(10), 1.3}, // new miner
		{"MissingFromCurrent", horde(10), nil, 1.3},  // came back after a peak away
		// Both weighted counts are 0 (low = 0): upstream gives the bonus.
		{"OnlyZeroWeightClasses", map[string]int{"always_on.test": 5}, map[string]int{"always_on.test": 5}, 1.3},
		// Weighted: 99·10 + 1·0 = 990 against 99·10 + 1·300 = 1290: 1.303 < 1.4.
		{"WeightedByClass", horde(10), map[string]int{HordeClass: 10, llm: 300}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := History{CurrPeak: Counts{}, PrevPeak: Counts{}}
			if tt.prev != nil {
				h.PrevPeak["A"] = tt.prev
			}
			if tt.curr != nil {
				h.CurrPeak["A"] = tt.curr
			}
			require.InDelta(t, tt.want, dancing("A", h, DefaultParams()), 1e-12)
		})
	}
}

func TestNonPeak(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name          string
		peak, current map[string]int
		want          float64
	}{
		{"AbsentFromPeak", nil, map[string]int{llm: 1}, 1},
		{"KeepsAll", map[string]int{llm: 20}, map[string]int{llm: 20}, 1},
		{"KeepsExactlyTenPercent", map[string]int{llm: 20}, map[string]int{llm: 2}, 1},
		{"KeepsFivePercent", map[string]int{llm: 20}, map[string]int{llm: 1}, 0.8},
		{"DroppedAClass", map[string]int{llm: 20, HordeClass: 1}, map[string]int{llm: 20}, 0.8},
		{"ZeroAtPeakIgnored", map[string]int{llm: 20, HordeClass: 0}, map[string]int{llm: 20}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.InDelta(t, tt.want, nonPeak(tt.peak, tt.current, DefaultParams()), 1e-12)
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		results []Result
		wantErr string
	}{
		{"Good", []Result{{"A", llm, 1, 1, 0, 0}, {"A", HordeClass, 1, 0, 0, 1}}, ""},
		{"NoHotkey", []Result{{"", llm, 1, 1, 0, 0}}, "miners[0].hotkey"},
		{"NoClass", []Result{{"A", "", 1, 1, 0, 0}}, "miners[0].executor_class"},
		{"Negative", []Result{{"A", llm, 1, -1, 0, 0}}, "counts must be"},
		{"Huge", []Result{{"A", llm, MaxCount + 1, 0, 0, 0}}, "counts must be"},
		{"Twice", []Result{{"A", llm, 1, 1, 0, 0}, {"A", llm, 1, 1, 0, 0}}, "miners[1]: A / always_on.llm.a6000 given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.results)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
