package batch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/minersim"
)

func TestSplitMiners(t *testing.T) {
	t.Parallel()

	miners := func(n int) []Miner {
		out := make([]Miner, n)
		for i := range out {
			out[i] = Miner{Hotkey: fmt.Sprintf("m%d", i)}
		}
		return out
	}
	for _, tc := range []struct {
		name            string
		miners, per     int
		wantSizes       []int
		wantShardsTotal int
	}{
		{"Disabled", 5, 0, []int{5}, 5},
		{"FewerThanAShard", 3, 4, []int{3}, 3},
		{"Exact", 4, 2, []int{2, 2}, 4},
		{"EvenedOut", 5, 4, []int{3, 2}, 5},
		{"Many", 10, 3, []int{3, 3, 2, 2}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shards := SplitMiners(miners(tc.miners), tc.per, rand.Reader)
			seen := map[string]bool{}
			var sizes []int
			for _, s := range shards {
				sizes = append(sizes, len(s))
				for _, m := range s {
					require.False(t, seen[m.Hotkey], "miner %s in two shards", m.Hotkey)
					seen[m.Hotkey] = true
				}
			}
			require.Equal(t, tc.wantSizes, sizes)
			require.Len(t, seen, tc.wantShardsTotal, "every miner in a shard")
		})
	}
}

func TestMergeStages(t *testing.T) {
	t.Parallel()

	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	shard0 := []Stage{
		{Name: "manifests", StartedAt: at(0), FinishedAt: at(10), Counts: map[string]int64{"received": 2}},
		{Name: "hot", StartedAt: at(50), FinishedAt: at(90), Counts: map[string]int64{"sent": 3}},
	}
	shard1 := []Stage{
		{Name: "manifests", StartedAt: at(5), FinishedAt: at(20), Counts: map[string]int64{"received": 1, "failed": 1}},
		{Name: "hot", StartedAt: at(40), FinishedAt: at(80), Counts: map[string]int64{"sent": 2}},
		{Name: "receipts", StartedAt: at(80), FinishedAt: at(85)},
	}
	require.Equal(t, []Stage{
		{Name: "manifests", StartedAt: at(0), FinishedAt: at(20), Counts: map[string]int64{"received": 3, "failed": 1}},
		{Name: "hot", StartedAt: at(40), FinishedAt: at(90), Counts: map[string]int64{"sent": 5}},
		{Name: "receipts", StartedAt: at(80), FinishedAt: at(85)},
	}, MergeStages([][]Stage{shard0, shard1}))
	require.Empty(t, MergeStages(nil))
}

// TestRunAgree runs a batch as a shard: AgreeOffer sets the stagger of the initial requests,
// Agree is called once, after availability, and the gate opens at the instant it returns, not
// before; an Agree that fails fails the hot stage and no job request is sent.
func TestRunAgree(t *testing.T) {
	t.Parallel()

	t.Run("OpensAtTheAgreedInstant", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, minersim.Config{Miners: 2, Manifest: manifestOf("always_on.test", 2)})
		var calls int
		var sendAt time.Time
		bundle.plan.AgreeWithin = time.Second
		bundle.plan.Agree = func(context.Context) (time.Time, error) {
			calls++
			sendAt = time.Now().Add(300 * time.Millisecond)
			return sendAt, nil
		}
		res := bundle.run(t)
		require.Equal(t, 1, calls)
		require.Equal(t, map[Outcome]int{OutcomeCompleted: 4}, outcomes(res), jobsReport(res))
		require.False(t, res.HotRelease.Before(sendAt), "released %v before the agreed %v", res.HotRelease, sendAt)
		for _, j := range res.Jobs {
			require.False(t, j.BeforeSend.Before(sendAt), "job %s sent before the agreed instant", j.UUID)
		}
	})

	t.Run("StaggersFromTheAgreedOffer", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, minersim.Config{Miners: 2, Manifest: manifestOf("always_on.test", 1)})
		var t0 time.Time
		bundle.plan.AgreeWithin = time.Second
		bundle.plan.AgreeOffer = func(_ context.Context, maxSpin time.Duration) (time.Time, time.Duration, error) {
			require.Equal(t, testSpinUp, maxSpin, "this shard's own longest spin-up")
			t0 = time.Now().Add(300 * time.Millisecond)
			return t0, testSpinUp + 600*time.Millisecond, nil // another shard tests a class with a longer spin-up
		}
		res := bundle.run(t)
		require.Equal(t, map[Outcome]int{OutcomeCompleted: 2}, outcomes(res), jobsReport(res))
		for _, j := range res.Jobs {
			// Offered at t0 + the batch's longest spin-up − its own, so ready when the others are.
			require.False(t, j.InitialSentAt.Before(t0.Add(600*time.Millisecond)), "job %s offered early", j.UUID)
		}
		require.False(t, res.HotRelease.Before(t0.Add(testSpinUp+600*time.Millisecond)), "sent before the batch's spin-up was over")
	})

	t.Run("FailureSendsNothing", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, minersim.Config{Miners: 1, Manifest: manifestOf("always_on.test", 1)})
		bundle.plan.Agree = func(context.Context) (time.Time, error) { return time.Time{}, errors.New("database gone") }
		res, err := Run(context.Background(), bundle.cfg, bundle.plan)
		require.ErrorContains(t, err, "database gone")
		require.Empty(t, bundle.fleet.ArrivalsWhere(minersim.ArrivalFilter{MessageType: "V0JobRequest"}))
		require.Len(t, res.Jobs, 1, "the job is judged with what is known")
	})
}
