package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/benchdb"
	"drover.dev/services/build-scheduler/internal/dag"
)

// TestSample keeps about the jobs asked for, in the graph's proportions, and every kept job's
// dependencies, so that the sample is a group the scheduler accepts.
func TestSample(t *testing.T) {
	t.Parallel()
	graph := benchdb.Graph(target).Jobs
	for _, n := range []int{2000, 500} {
		jobs := sample(graph, n)
		require.InDelta(t, n, len(jobs), float64(n)/10)
		kept := map[string]bool{}
		chains := 0
		for _, j := range jobs {
			kept[j.Name] = true
			if j.Name[0] == 'c' {
				chains++
			}
		}
		for _, j := range jobs {
			for _, d := range j.DependsOn {
				require.True(t, kept[d], "job %s kept without its dependency %s", j.Name, d)
			}
		}
		require.InDelta(t, 0.5, float64(chains)/float64(len(jobs)), 0.05, "chains are half the graph")
		_, err := dag.Validate(dag.Submission{Name: "sample", Jobs: jobs}, dag.DefaultLimits)
		require.NoError(t, err)
	}
	require.Len(t, sample(graph, 10000), len(graph))
}
