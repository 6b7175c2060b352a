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

// feedTimeout bounds one feed pass: a pass only enqueues up to FEED_AHEAD makes, a chunk per
// transaction, and then snoozes.
const feedTimeout = time.Minute

// FeedWorker works populate_feed jobs: the feeder of a table's scheduled keys. Each pass enqueues
// makes until FEED_AHEAD of them wait in River, then snoozes for FEED_EVERY and feeds again as they
// drain; it completes once every scheduled key of the table has its make enqueued. A later
// schedule_jobs writes a new feed job in its own transaction.
type FeedWorker struct {
	river.WorkerDefaults[populate.FeedArgs]
	Engine *populate.Engine
}

// Timeout is the longest a feed pass may run.
func (w *FeedWorker) Timeout(*river.Job[populate.FeedArgs]) time.Duration { return feedTimeout }

// NextRetry retries a failed feed pass (a lost connection, a shutdown) after a second, not
// River's growing backoff: while a feed job waits to be retried no other is written for its
// table, and the keys it would feed wait with it.
func (w *FeedWorker) NextRetry(*river.Job[populate.FeedArgs]) time.Time {
	return time.Now().Add(feedRetry)
}

// feedRetry is how soon a failed feed pass is tried again.
const feedRetry = time.Second

// Work feeds one table.
func (w *FeedWorker) Work(ctx context.Context, job *river.Job[populate.FeedArgs]) error {
	res, err := w.Engine.Feed(ctx, job.Args.Table)
	if errors.Is(err, problem.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("feed %s: %w", job.Args.Table, err)) // no retry can feed it
	}
	if err != nil {
		return err
	}
	if res.More {
		return river.JobSnooze(w.Engine.Config().FeedEvery)
	}
	return nil
}
