package scoring

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHordeScore(t *testing.T) {
	t.Parallel()

	// Expected values worked out by hand: σ(n) = 1 / (1 + exp(10^β · (1/n − δ))).
	tests := []struct {
		name               string
		sum                float64
		n                  int
		alpha, beta, delta float64
		want               float64
	}{
		{"NoJobs", 0, 0, 0, 0, 1, 0},
		// σ(1) = 1 / (1 + e^0) = 0.5.
		{"OneExecutorHalves", 1, 1, 0, 0, 1, 0.5},
		// σ(2) = 1 / (1 + e^-0.5) = 1 / 1.60653066 = 0.62245933; × 2.
		{"TwoExecutors", 2, 2, 0, 0, 1, 1.24491866},
		// avg 0.75, σ(4) = 1 / (1 + e^-0.75) = 1 / 1.47236655 = 0.67917869; 0.75 × 3 × σ(4).
		{"AlphaOneWeighsTheAverage", 3, 4, 1, 0, 1, 1.52815207},
		// σ = 1 / (1 + e^(10 · 0.5)) = 1 / 149.41315910 = 0.00669285.
		{"SteepBetaPunishesSmallHordes", 1, 1, 0, 1, 0.5, 0.00669285},
		// avg 0 raised to α = 0 is 1 (math.Pow), and Σb = 0 makes the score 0.
		{"AllFailed", 0, 3, 0, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.InDelta(t, tt.want, HordeScore(tt.sum, tt.n, tt.alpha, tt.beta, tt.delta), 1e-8)
		})
	}
}
