package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrintScores(t *testing.T) {
	t.Parallel()
	class := func(name string, executors, completed, excused, failed int) classScore {
		return classScore{ExecutorClass: name, Executors: executors, Completed: completed, Excused: excused, Failed: failed}
	}
	s := batchScores{Peak: true}
	for i, w := range []float64{0.05, 0.30, 0.10, 0.25, 0, 0.20, 0.10} {
		s.Miners = append(s.Miners, minerScore{
			Hotkey: "5Hotkey" + strings.Repeat(string(rune('a'+i)), 40), Score: w * 2, Weight: w, WeightU16: int(w * 65535),
			Classes: []classScore{class("always_on.test", 2, 1, 1, 0), class("always_on.gpu-24gb", 1, 0, 0, 1)},
		})
	}
	var out strings.Builder
	printScores(&out, s)
	require.Equal(t, `  scores: 7 miners scored (peak true); top 5 by weight:
    hotkey           score   weight weight_u16
    5Hotke…bbbb     0.6000   0.3000      19660
    5Hotke…dddd     0.5000   0.2500      16383
    5Hotke…ffff     0.4000   0.2000      13107
    5Hotke…cccc     0.2000   0.1000       6553
    5Hotke…gggg     0.2000   0.1000       6553
  per class:
    always_on.gpu-24gb     executors    7  completed    0  excused   0  failed   7
    always_on.test         executors   14  completed    7  excused   7  failed   0
`, out.String())
}
