package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStageTrace reads the stage histogram of two workers' expositions, takes the earlier reading
// off, and estimates quantiles inside the buckets.
func TestStageTrace(t *testing.T) {
	t.Parallel()
	exposition := func(n1, n2, n4 float64) string {
		return strings.Join([]string{
			`# TYPE drover_build_worker_stage_seconds histogram`,
			`drover_build_worker_stage_seconds_bucket{stage="run",le="0.001"} ` + fmtF(n1),
			`drover_build_worker_stage_seconds_bucket{stage="run",le="0.002"} ` + fmtF(n2),
			`drover_build_worker_stage_seconds_bucket{stage="run",le="0.004"} ` + fmtF(n4),
			`drover_build_worker_stage_seconds_bucket{stage="run",le="+Inf"} ` + fmtF(n4),
			`drover_build_worker_stage_seconds_sum{stage="run"} ` + fmtF(n4*0.002),
			`drover_build_worker_stage_seconds_count{stage="run"} ` + fmtF(n4),
			`drover_build_worker_builds_total{target="x",outcome="succeeded"} 3`,
		}, "\n")
	}
	before := stageTrace{}
	require.NoError(t, before.add(strings.NewReader(exposition(5, 5, 5))))
	after := stageTrace{}
	for range 2 { // two workers
		require.NoError(t, after.add(strings.NewReader(exposition(5, 55, 105))))
	}
	run := after.since(before)["run"]
	require.InDelta(t, 205, run.count, 1e-9)
	// 5 of 205 under 1 ms, 105 under 2 ms, all under 4 ms: the median's rank 102.5 lies 97.5 of
	// 100 into the 1–2 ms bucket, the 99th percentile's 202.95 lies 97.95 of 100 into 2–4 ms.
	require.InDelta(t, 1975*time.Microsecond, run.quantile(0.5), float64(time.Microsecond))
	require.InDelta(t, 3959*time.Microsecond, run.quantile(0.99), float64(time.Microsecond))
	require.InDelta(t, 2*time.Millisecond, run.mean(), float64(time.Microsecond))
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
