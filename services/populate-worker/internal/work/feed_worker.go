package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
)

// FeedWorker works populate_feed jobs: the feeder of a table's scheduled keys. Each pass enqueues
// makes until FEED_AHEAD of them wait in River, then snoozes for FEED_EVERY and feeds again as they
// drain; it completes once every scheduled key of the table has its make enqueued. A later
// schedule_jobs inserts a new feed job in its own transaction. Retried in River UI, it feeds
// again; cancelled while it runs, the chunk it was enqueueing rolls back.
type FeedWorker struct {
	river.WorkerDefaults[populate.FeedArgs]
	Engine *populate.Engine
	Log    *ActionLog
	// FeedTimeout bounds one feed pass: a pass only enqueues up to FEED_AHEAD makes, a chunk per
	// transaction, and then snoozes.
	FeedTimeout time.Duration
}

// Timeout is the longest a feed pass may run.
func (w *FeedWorker) Timeout(*river.Job[populate.FeedArgs]) time.Duration { return w.FeedTimeout }

// NextRetry retries a failed feed pass (a lost connection, a shutdown) after a second, not
// River's growing backoff: while a feed job waits to be retried no other is written for its
// table, and the keys it would feed wait with it.
func (w *FeedWorker) NextRetry(*river.Job[populate.FeedArgs]) time.Time {
	return time.Now().Add(feedRetry)
}

// feedRetry is how soon a failed feed pass is tried again.
const feedRetry = time.Second

// feedOutput is what a feed job did, as River UI shows it.
type feedOutput struct {
	Table    string `json:"table"`
	Enqueued int    `json:"enqueued"`
}

// Work feeds one table.
func (w *FeedWorker) Work(ctx context.Context, job *river.Job[populate.FeedArgs]) error {
	res, err := w.Engine.Feed(ctx, job.Args.Table)
	if errors.Is(err, problem.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("feed %s: %w", job.Args.Table, err)) // no retry can feed it
	}
	if err == nil && res.More {
		w.Log.ran(ctx, job.JobRow, fmt.Sprintf("fed %d makes; more to feed after FEED_EVERY", res.Enqueued), nil)
		return river.JobSnooze(w.Engine.Config().FeedEvery)
	}
	if err == nil {
		err = river.RecordOutput(ctx, feedOutput{Table: job.Args.Table, Enqueued: res.Enqueued})
	}
	w.Log.ran(ctx, job.JobRow, fmt.Sprintf("fed %d makes; every scheduled key has its make", res.Enqueued), err)
	return err
}
