package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	runner "drover.dev/services/batch-runner/internal/batch"
	"drover.dev/shared/batchwatch"
)

// TestWatcherPrintsStages feeds the watcher the snapshots a batch serves while it runs, as
// batch-runner encodes them (so the demo reads the fields the service writes), then the batch as
// stored, and checks the lines make run shows: a line per stage start and end, counts that
// changed at most once a second in between, and the ends the polls missed from the stored batch.
func TestWatcherPrintsStages(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ptr := func(d time.Duration) *time.Time { x := at(d); return &x }
	v := runner.ProgressView{BatchID: 3, JobID: 11, Phase: runner.PhasePrepare}
	start := func(name string, d time.Duration) {
		v.Stages = append(v.Stages, runner.StageView{Name: name, StartedAt: at(d)})
	}
	end := func(d time.Duration, counts map[string]int64) {
		last := &v.Stages[len(v.Stages)-1]
		last.FinishedAt, last.Counts = ptr(d), counts
	}
	var out strings.Builder
	w := batchwatch.New(&out)
	poll := func(now time.Duration) {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var p batchwatch.Progress
		require.NoError(t, json.Unmarshal(raw, &p))
		w.Update(p, at(now))
	}

	poll(0) // phase 1: nothing to say yet
	v.Phase, v.Miners = runner.PhaseRun, 50
	start("manifests", 0)
	v.Manifests.Received = 49
	poll(100 * time.Millisecond)
	poll(500 * time.Millisecond) // within a second of the last line
	poll(1200 * time.Millisecond)
	poll(2 * time.Second) // unchanged
	v.Manifests.Failed = 1
	end(5*time.Second, map[string]int64{"miners": 50, "received": 49, "failed": 1})
	start("generate", 5*time.Second)
	v.Executors = 147
	poll(5001 * time.Millisecond) // generate says nothing until it ends
	end(5*time.Second+1200*time.Microsecond, map[string]int64{"executors": 147})
	start("availability", 5*time.Second+time.Millisecond)
	poll(5100 * time.Millisecond)
	v.Availability = runner.AvailabilityView{Accepted: 141, Declined: 6, Ready: 140, NotReady: 1}
	end(6*time.Second+time.Millisecond, map[string]int64{"accepted": 141, "declined": 6, "ready": 140, "not_ready": 1})
	start("hot", 6*time.Second+time.Millisecond)
	spread := int64(3100)
	v.Hot = runner.HotView{Jobs: 140, ReleasedAt: ptr(6 * time.Second), Sent: 140, SendSpreadUS: &spread}
	poll(6200 * time.Millisecond)
	v.Hot.Finished, v.Hot.Failed = 130, 3
	poll(6500 * time.Millisecond)
	poll(7300 * time.Millisecond)
	poll(8400 * time.Millisecond) // unchanged
	// The hot phase ends, receipts go and the batch is written between two polls.
	var final batch
	require.NoError(t, json.Unmarshal([]byte(`{"send_spread_us": 3100, "stages": [
		{"name": "manifests", "started_at": "2026-11-22T10:00:00Z", "finished_at": "2026-11-22T10:00:05Z"},
		{"name": "hot", "started_at": "2026-11-22T10:00:06.001Z", "finished_at": "2026-11-22T10:00:13.001Z",
		 "counts": {"jobs": 140, "sent": 140, "send_failed": 0, "finished": 131, "failed": 3}},
		{"name": "receipts", "started_at": "2026-11-22T10:00:13.001Z", "finished_at": "2026-11-22T10:00:13.014Z"}]}`), &final))
	w.Finish(final.Stages, final.SendSpreadUS)

	require.Equal(t, `batch 3 running: 50 miners to test
  manifests     asking 50 miners for their executors
  manifests     49/50 miners so far
  manifests     49/50 miners (1 without a manifest) in 5.00 s
  jobs          147 executors to test, a job each, in 1.2 ms
  availability  offering 147 jobs, staggered by executor class spin-up
  availability  141 accepted, 6 declined; 140 ready, 1 not ready in 1.00 s
  hot phase     sent 140 jobs in one release, spread 3.1 ms
  hot phase     133/140 answered (130 finished, 3 failed) so far
  hot phase     131 finished, 3 failed, 6 no answer in 7.00 s
  receipts      done in 13 ms
`, out.String())
}
