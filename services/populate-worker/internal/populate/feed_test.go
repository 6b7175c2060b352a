package populate

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
)

// scheduledGrid is a test bundle with cfg whose pair table has n keys scheduled (grid).
func scheduledGrid(t *testing.T, cfg Config, n int) *testBundle {
	t.Helper()
	b := setup(t, cfg)
	b.grid(t, n)
	b.schedule(t, ScheduleOpts{})
	return b
}

// drainMakes works up to n waiting populate_make jobs one at a time, oldest first, as one River
// worker would, and returns how many it worked.
func (b *testBundle) drainMakes(t *testing.T, n int) int {
	t.Helper()
	for i := range n {
		var args queue.PopulateMakeArgs
		id, ok := b.startNext(t, queue.QueuePopulate, &args)
		if !ok {
			return i
		}
		_, err := b.engine.MakeKey(b.ctx, Background, args.Table, args.KeyHash, MakeOpts{JobID: id}, b.endRiverJob(t, id))
		require.NoError(t, err)
	}
	return n
}

// requireOneMakeJobPerKey checks that every key of pair got exactly one populate_make job, and
// that keys many.
func (b *testBundle) requireOneMakeJobPerKey(t *testing.T, keys int) {
	t.Helper()
	require.Equal(t, keys, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make'`))
	require.Equal(t, keys, b.count(t, `SELECT count(DISTINCT args ->> 'key_hash') FROM river_job WHERE kind = 'populate_make'`),
		"no key's make enqueued twice")
}

func (b *testBundle) notEnqueued(t *testing.T) int64 {
	t.Helper()
	p, err := b.engine.Progress(b.ctx, "pair", nil)
	require.NoError(t, err)
	return p.NotEnqueued
}

func TestFeed(t *testing.T) {
	t.Parallel()

	t.Run("KeepsFeedAheadWaitingAndEnqueuesEachKeyOnce", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{FeedAhead: 3}, 10)
		require.EqualValues(t, 10, b.notEnqueued(t))
		require.Equal(t, FeedResult{Enqueued: 3, More: true}, b.feed(t))
		require.Equal(t, FeedResult{More: true}, b.feed(t), "FEED_AHEAD makes wait: nothing more")
		require.EqualValues(t, 7, b.notEnqueued(t), "progress shows the keys whose make River does not show yet")
		require.Equal(t, 2, b.drainMakes(t, 2))
		require.Equal(t, FeedResult{Enqueued: 2, More: true}, b.feed(t), "the drained makes are replaced")
		for b.drainMakes(t, 3) > 0 {
			b.feed(t)
		}
		require.Equal(t, FeedResult{}, b.feed(t), "every key was fed")
		require.Len(t, b.calls.list(), 10, "every key made once")
		require.Equal(t, 10, b.count(t, `SELECT count(*) FROM dst`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
		b.requireOneMakeJobPerKey(t, 10)
	})
	t.Run("APassEndsAfterFeedAheadMakesHoweverFastTheyDrain", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{FeedAhead: 3}, 10)
		require.Equal(t, FeedResult{Enqueued: 3, More: true}, b.feed(t), "a feed job's pass is bounded; it comes back")
		// Workers as fast as the feeder: every make is done before the feeder looks again.
		require.Equal(t, 3, queuetest.SetJobs(b.ctx, t, b.pool, "", queue.PopulateMakeArgs{}.Kind(),
			queuetest.Patch{State: queuetest.Ptr(rivertype.JobStateCompleted), Finalized: queuetest.Ptr(true)}))
		require.Equal(t, FeedResult{Enqueued: 3, More: true}, b.feed(t))
	})
	t.Run("ConcurrentFeedersEnqueueEachKeyOnce", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{FeedAhead: 100_000}, 3000)
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for range 4 {
			wg.Go(func() {
				res, err := b.engine.Feed(b.ctx, "pair")
				require.NoError(t, err)
				mu.Lock()
				total += res.Enqueued
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Equal(t, 3000, total)
		b.requireOneMakeJobPerKey(t, 3000)
		require.Zero(t, b.notEnqueued(t))
	})
	t.Run("AChunkThatDidNotCommitLeavesItsKeysToTheNextFeeder", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{}, 3)
		// A feeder's chunk holds the keys (marked, River jobs inserted) when its replica is killed:
		// its transaction never commits.
		chunk, err := b.pool.Begin(b.ctx)
		require.NoError(t, err)
		defer func() { _ = chunk.Rollback(b.ctx) }()
		n, err := b.engine.feedChunk(b.ctx, chunk, "pair", 1000)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.Equal(t, FeedResult{}, b.feed(t), "keys locked by another feeder are its own")
		require.NoError(t, chunk.Rollback(b.ctx))
		require.Equal(t, FeedResult{Enqueued: 3}, b.feed(t))
		b.requireOneMakeJobPerKey(t, 3)
	})
	t.Run("ReclaimWritesAFeedJobWhenNoneWaits", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{}, 2)
		feedJobs := func(state string) int {
			return b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_feed' AND state = $1::river_job_state`, state)
		}
		_, err := b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, feedJobs("available"), "a waiting feed job is enough")
		// The replica that fetched the feed job was killed: River shows it running until it
		// rescues it, FEED_TIMEOUT and up to 30 s later.
		dead := queuetest.FetchAsDeadProcess(b.ctx, t, b.pool, "", queue.QueuePopulateFeed, "dead-client", 10)
		require.Len(t, dead, 1)
		queuetest.SetJob(b.ctx, t, b.pool, "", dead[0].ID, queuetest.Patch{AttemptedAt: queuetest.Ptr(time.Now().Add(-time.Hour))})
		_, err = b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, feedJobs("available"), "the keys get a feed job within a reclaim period")
		require.Equal(t, FeedResult{Enqueued: 2}, b.feed(t))
		queuetest.SetJobs(b.ctx, t, b.pool, "", FeedArgs{}.Kind(),
			queuetest.Patch{State: queuetest.Ptr(rivertype.JobStateCompleted), Finalized: queuetest.Ptr(true)})
		_, err = b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Zero(t, feedJobs("available"), "no key left to feed, no feed job")
	})
	t.Run("AScheduleWhileTheFeederRunsWritesAnotherFeedJob", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{}, 2)
		b.insertSrc(t, [3]int{3, 1, 3})
		require.Equal(t, 1, b.schedule(t, ScheduleOpts{}).Scheduled)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_feed'`), "one waiting feed job is enough")
		// The feeder runs and has looked for keys already: the next schedule's keys need a feed
		// job of their own, or they would wait for the next reclaim pass.
		require.Len(t, queuetest.FetchAsDeadProcess(b.ctx, t, b.pool, "", queue.QueuePopulateFeed, "feeder", 10), 1)
		b.insertSrc(t, [3]int{4, 1, 4})
		require.Equal(t, 1, b.schedule(t, ScheduleOpts{}).Scheduled)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_feed' AND state = 'available'`))
	})
	t.Run("TheFeederLeavesARunsKeysToIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 5)
		run, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, Processes: 2})
		require.NoError(t, err)
		require.Equal(t, FeedResult{}, b.feed(t), "the feeder leaves alone the keys the run holds")
		_, err = b.engine.Reclaim(b.ctx)
		require.NoError(t, err)
		require.Equal(t, FeedResult{}, b.feed(t), "and the reclaim pass gives none of them back: the run has them")
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make' AND priority = 1
			AND (args ->> 'run_id')::bigint = `+strconv.FormatInt(run.ID, 10)), "a run's makes go first")
		b.drainRun(t)
		b.requireOneMakeJobPerKey(t, 5)
		require.Len(t, b.calls.list(), 5, "each key made once")
		got, err := b.engine.GetRun(b.ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, RunDone, got.State)
		require.EqualValues(t, 5, got.Made, "the run made its keys itself")
		require.Zero(t, got.MadeElsewhere)
		require.Zero(t, got.Remaining)
	})
	t.Run("FedMakesNotYetStartedYieldToARun", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 5)
		b.schedule(t, ScheduleOpts{})
		require.Equal(t, FeedResult{Enqueued: 5}, b.feed(t))
		run, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, Processes: 1})
		require.NoError(t, err)
		// A fed make starts before the run's, for a key the run has not handed to River yet: it
		// yields, and the key is the run's to make.
		hashes := b.hashes(t, StatusScheduled)
		end, err := b.engine.MakeKey(b.ctx, Background, "pair", hashes[4], MakeOpts{}, nil)
		require.NoError(t, err)
		require.Equal(t, OutcomeYielded, end.Outcome, end.Note)
		require.Contains(t, end.Note, fmt.Sprintf("populate run %d", run.ID))
		require.Equal(t, FeedResult{}, b.feed(t), "the yielded key stays the run's")
		b.drainRun(t)
		got, err := b.engine.GetRun(b.ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, RunDone, got.State)
		require.EqualValues(t, 5, got.Made, "every key was made by the run")
		require.Zero(t, got.MadeElsewhere)
		require.Len(t, b.calls.list(), 5, "each key made once")
		require.Equal(t, 5, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make'
			AND (args ->> 'run_id') IS NULL AND state = 'cancelled'`), "the fed makes found their key made")
	})
	t.Run("ACancelledRunGivesItsKeysBackToTheFeeder", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{}, 5)
		run, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, SkipSchedule: true})
		require.NoError(t, err)
		require.Equal(t, FeedResult{}, b.feed(t), "the run took every key from the feeder")
		// A fed make that starts now finds the key the run's.
		hashes := b.hashes(t, StatusScheduled)
		end, err := b.engine.MakeKey(b.ctx, Background, "pair", hashes[3], MakeOpts{}, nil)
		require.NoError(t, err)
		require.Equal(t, OutcomeYielded, end.Outcome, end.Note)

		_, err = b.engine.CancelRun(b.ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, FeedResult{Enqueued: 4}, b.feed(t), "the four keys the run never handed to River go back to the feeder")
		b.drainRun(t) // the run's own make of its first key gives that key back too
		require.Equal(t, FeedResult{Enqueued: 1}, b.feed(t))
		b.drainRun(t)
		require.Len(t, b.calls.list(), 5, "every key made once, by the background")
		got, err := b.engine.GetRun(b.ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, RunInterrupted, got.State)
		require.EqualValues(t, 5, got.Dropped)
	})
	t.Run("ARunsMakesGoBeforeTheWaitingFedOnes", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{FeedAhead: 3}, 5)
		require.Equal(t, FeedResult{Enqueued: 3, More: true}, b.feed(t))
		run, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, Processes: 5})
		require.NoError(t, err)
		require.Equal(t, 5, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make' AND priority = 1`),
			"every key of the run gets the run's make, fed or not")
		var first []int64
		for range 5 {
			var args queue.PopulateMakeArgs
			_, ok := b.startNext(t, queue.QueuePopulate, &args)
			require.True(t, ok)
			first = append(first, args.RunID)
		}
		require.Equal(t, []int64{run.ID, run.ID, run.ID, run.ID, run.ID}, first, "River fetches the run's makes, enqueued last, first")
	})
	t.Run("IgnoreRescheduleAndCleanup", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{}, 4)
		hashes := b.hashes(t, StatusScheduled)
		_, err := b.engine.Ignore(b.ctx, "pair", hashes[0])
		require.NoError(t, err)
		_, err = b.pool.Exec(b.ctx, `DELETE FROM src WHERE a = 4`)
		require.NoError(t, err)
		removed, err := b.engine.CleanupJobs(b.ctx, "pair", 0)
		require.NoError(t, err)
		require.Equal(t, 1, removed.Removed)
		require.Equal(t, FeedResult{Enqueued: 2}, b.feed(t), "neither the ignored key nor the cleaned-up one is fed")
		job, err := b.engine.Reschedule(b.ctx, "pair", hashes[0])
		require.NoError(t, err)
		require.True(t, job.Enqueued, "reschedule enqueues the key's make itself")
		require.Equal(t, FeedResult{}, b.feed(t))
		b.requireOneMakeJobPerKey(t, 3)
	})
	t.Run("GaugeCountsKeysNotEnqueued", func(t *testing.T) {
		t.Parallel()
		b := scheduledGrid(t, Config{FeedAhead: 2}, 5)
		read := func() float64 {
			samples, err := JobGauges(func() []string { return []string{"pair"} })[1].Read(b.ctx, b.pool)
			require.NoError(t, err)
			require.Len(t, samples, 1)
			return samples[0].Value
		}
		require.InDelta(t, 5, read(), 0)
		b.feed(t)
		require.InDelta(t, 3, read(), 0)
	})
}
