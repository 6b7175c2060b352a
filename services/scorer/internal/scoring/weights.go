package scoring

import (
	"math"
	"sort"
)

// U16Total is what u16 weights sum to: Bittensor weights are u16 and the chain reads them as
// shares of their sum.
const U16Total = math.MaxUint16

// setWeights fills Weight (score / Σ score) and WeightU16: the weights as integers summing to
// exactly U16Total, by largest remainder (ties to the lower hotkey, so the split is
// deterministic). With every score 0 every weight stays 0: there is nothing to set.
func setWeights(miners []MinerScore) {
	var total float64
	for _, m := range miners {
		total += m.Score
	}
	if total <= 0 {
		return
	}
	type share struct {
		i    int
		frac float64
	}
	shares := make([]share, len(miners))
	left := U16Total
	for i := range miners {
		miners[i].Weight = miners[i].Score / total
		exact := miners[i].Weight * U16Total
		miners[i].WeightU16 = int(math.Floor(exact))
		left -= miners[i].WeightU16
		shares[i] = share{i, exact - math.Floor(exact)}
	}
	sort.SliceStable(shares, func(a, b int) bool { return shares[a].frac > shares[b].frac })
	for k := 0; left > 0 && k < len(shares); k++ {
		miners[shares[k].i].WeightU16++
		left--
	}
}
