package scoring

import "math"

// HordeScore is upstream's horde_score over n job scores summing to sum:
//
//	avg(b)^α · Σb · 1 / (1 + exp(10^β · (1/n − δ)))
//
// The sigmoid over 1/n lets a subnet owner favour large hordes over the same strength split into
// small ones; with α = 0, β = 0, δ = 1 it is 0.5·Σb for one executor and tends to ≈0.73·Σb as
// the horde grows. No jobs score 0.
func HordeScore(sum float64, n int, alpha, beta, delta float64) float64 {
	if n <= 0 {
		return 0
	}
	avg := sum / float64(n)
	sigmoid := 1 / (1 + math.Exp(math.Pow(10, beta)*(1/float64(n)-delta)))
	return math.Pow(avg, alpha) * sum * sigmoid
}
