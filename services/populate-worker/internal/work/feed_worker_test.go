package work

import (
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/services/populate-worker/internal/examples"
	"drover.dev/services/populate-worker/internal/populate"
)

func TestFeedWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, populate.Config{FeedAhead: 2})
	_, err := b.engine.ScheduleJobs(b.ctx, examples.Stats, populate.ScheduleOpts{})
	require.NoError(t, err)
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &FeedWorker{Engine: b.engine})
	work := func(args populate.FeedArgs) river.EventKind {
		tx, err := b.pool.Begin(b.ctx)
		require.NoError(t, err)
		defer tx.Rollback(b.ctx) // only the test's River job was written on it: the feeder writes on the pool
		res, err := w.Work(b.ctx, t, tx, args, nil)
		if err != nil {
			return river.EventKind("error: " + err.Error())
		}
		return res.EventKind
	}
	makes := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM river_job WHERE kind = 'populate_make'`).Scan(&n))
		return n
	}

	require.Equal(t, river.EventKindJobSnoozed, work(populate.FeedArgs{Table: examples.Stats}),
		"FEED_AHEAD makes wait and a key is left: the feeder comes back")
	require.Equal(t, 2, makes())
	queuetest.SetJobs(b.ctx, t, b.pool, "", queue.PopulateMakeArgs{}.Kind(),
		queuetest.Patch{State: queuetest.Ptr(rivertype.JobStateCompleted), Finalized: queuetest.Ptr(true)})
	require.Equal(t, river.EventKindJobCompleted, work(populate.FeedArgs{Table: examples.Stats}), "every key fed")
	require.Equal(t, 3, makes())
	require.Equal(t, river.EventKindJobCancelled, work(populate.FeedArgs{Table: "nope"}))
	fw := &FeedWorker{Engine: b.engine}
	before := time.Now()
	retry := fw.NextRetry(&river.Job[populate.FeedArgs]{})
	require.WithinRange(t, retry, before.Add(time.Second), time.Now().Add(time.Second),
		"a failed pass is retried a second after it failed, not after River's backoff: no other feed job is written meanwhile")
}
