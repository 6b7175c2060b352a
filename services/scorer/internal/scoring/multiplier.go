package scoring

// dancing returns the dancing bonus for hotkey, or 1. Upstream rewarded miners that move
// executors between their hotkeys ("dancing") to keep the subnet's hardware shifting rather than
// parked: a miner whose weighted executor count (Σ_c w_c · executors_c) differs by DancingRatio or
// more between the two last peak batches, or that is missing from one of them, has its score
// multiplied by DancingMultiplier (> 1, a bonus) in every batch until the next peak.
func dancing(hotkey string, h History, p Params) float64 {
	prev, inPrev := h.PrevPeak[hotkey]
	curr, inCurr := h.CurrPeak[hotkey]
	if !inPrev || !inCurr {
		return p.DancingMultiplier
	}
	low, high := weighted(prev, p), weighted(curr, p)
	if low > high {
		low, high = high, low
	}
	if low == 0 || high/low >= p.DancingRatio {
		return p.DancingMultiplier
	}
	return 1
}

func weighted(counts map[string]int, p Params) float64 {
	var sum float64
	for class, n := range counts {
		sum += p.ClassWeights[class] * float64(n)
	}
	return sum
}

// nonPeak returns the non-peak penalty, or 1, for a miner in a non-peak batch. A miner must keep
// at least NonPeakMinRatio of its peak executors online outside the peak, in every class it had
// executors of at the peak; otherwise its score is multiplied by NonPeakPenalty (< 1). A miner
// absent from the peak batch is not penalised: there is nothing to compare with.
func nonPeak(peak, current map[string]int, p Params) float64 {
	for class, peakCount := range peak {
		if peakCount == 0 {
			continue
		}
		n, ok := current[class]
		if !ok || float64(n)/float64(peakCount) < p.NonPeakMinRatio {
			return p.NonPeakPenalty
		}
	}
	return 1
}
