package batch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
)

// TestProgressCountsEveryStage runs a batch in which each miner goes wrong at a different point
// and checks that the live record ends with every count a watcher is told.
func TestProgressCountsEveryStage(t *testing.T) {
	t.Parallel()
	bundle := setup(t, minersim.Config{Miners: 8, Scenario: minersim.Scenario{Miners: map[int]minersim.Behaviour{
		1: {Disconnect: minersim.StageManifest},
		2: {Decline: minersim.DeclineNoReason},
		3: {Silent: minersim.StageAccept},
		4: {Silent: minersim.StageReady},
		5: {Answer: minersim.AnswerFail},
		6: {Answer: minersim.AnswerWrong},
		7: {Silent: minersim.StageAnswer},
	}}})
	// Miner 7 waits out the time limit and JobExtra; a 1 s limit keeps that short, and the other
	// answers are counted when they come, however late.
	lateLimit(&bundle.cfg)
	// Miner 1's manifest fails when it hangs up, so no miner waits ManifestTimeout out here: it
	// only bounds how long the honest manifests may take, which on a loaded 2-core -race run
	// exceeded setup's 5 s for three of the seven at once.
	bundle.cfg.ManifestTimeout = 30 * time.Second
	p := NewProgress(1, 42, 1)
	bundle.plan.Progress = p
	res := bundle.run(t)

	v := p.Snapshot()
	require.Equal(t, PhaseRun, v.Phase)
	require.Empty(t, v.Stage, "no stage runs after Run returned")
	require.Len(t, v.Stages, len(res.Stages))
	for i, s := range v.Stages {
		require.Equal(t, res.Stages[i].Name, s.Name)
		require.Equal(t, res.Stages[i].StartedAt, s.StartedAt)
		require.NotNil(t, s.FinishedAt, s.Name)
		require.Equal(t, res.Stages[i].FinishedAt, *s.FinishedAt)
		require.Equal(t, res.Stages[i].Counts, s.Counts, s.Name)
	}
	require.Equal(t, int64(8), v.Miners)
	require.Equal(t, ManifestCounts{Received: 7, Failed: 1}, v.Manifests)
	require.Equal(t, int64(7), v.Executors)
	require.Equal(t, AvailabilityView{Accepted: 5, Declined: 1, NoResponse: 1, Ready: 4, NotReady: 1}, v.Availability)

	require.Equal(t, int64(4), v.Hot.Jobs)
	require.Equal(t, 4, v.Hot.Sent)
	require.Zero(t, v.Hot.SendFailed)
	require.NotNil(t, v.Hot.ReleasedAt)
	require.Equal(t, res.HotRelease, *v.Hot.ReleasedAt)
	require.NotNil(t, v.Hot.SendSpreadUS)
	require.Equal(t, res.SendSpread.Microseconds(), *v.Hot.SendSpreadUS)
	require.Equal(t, int64(2), v.Hot.Finished, "a wrong answer is a finished job until it is judged")
	require.Equal(t, int64(1), v.Hot.Failed)

	// Each stage keeps the counts it ended with, for the batch as stored.
	counts := map[string]map[string]int64{}
	for _, s := range res.Stages {
		counts[s.Name] = s.Counts
	}
	require.Equal(t, map[string]map[string]int64{
		"manifests":    {"miners": 8, "received": 7, "failed": 1},
		"generate":     {"executors": 7},
		"availability": {"accepted": 5, "declined": 1, "no_response": 1, "ready": 4, "not_ready": 1},
		"hot":          {"jobs": 4, "sent": 4, "send_failed": 0, "finished": 2, "failed": 1},
		"receipts":     nil,
	}, counts)
}

func TestTracker(t *testing.T) {
	t.Parallel()

	t.Run("OneCurrentAtATime", func(t *testing.T) {
		t.Parallel()
		var tr Tracker
		require.Nil(t, tr.Current())
		first := tr.Start(1, 10, 1)
		require.Same(t, first, tr.Current())
		second := tr.Start(2, 11, 1)
		tr.Done(first) // a late Done of an older batch leaves the newer one alone
		require.Same(t, second, tr.Current())
		tr.Done(second)
		require.Nil(t, tr.Current())
	})

	t.Run("NilTrackerKeepsNothing", func(t *testing.T) {
		t.Parallel()
		var tr *Tracker
		p := tr.Start(1, 10, 1)
		require.NotNil(t, p)
		require.Nil(t, tr.Current())
		tr.Done(p)
	})

	t.Run("StageRunsUntilFinished", func(t *testing.T) {
		t.Parallel()
		p := NewProgress(3, 12, 2)
		start := time.Now()
		p.stageStarted("manifests", start)
		v := p.Snapshot()
		require.Equal(t, PhasePrepare, v.Phase)
		require.Equal(t, "manifests", v.Stage)
		require.Equal(t, []StageView{{Name: "manifests", StartedAt: start}}, v.Stages)
		require.Nil(t, v.Hot.ReleasedAt, "no release before the hot phase")
		end := start.Add(time.Second)
		p.stageFinished("manifests", end, map[string]int64{"received": 0})
		v = p.Snapshot()
		require.Empty(t, v.Stage)
		require.Equal(t, []StageView{{Name: "manifests", StartedAt: start, FinishedAt: &end, Counts: map[string]int64{"received": 0}}}, v.Stages)
	})
}
