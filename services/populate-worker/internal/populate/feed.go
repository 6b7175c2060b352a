package populate

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/populate/dbsqlc"
	"drover.dev/shared/postgres"
)

// FeedArgs asks the populate-worker to enqueue the populate_make jobs of a table's scheduled keys
// that have none yet (the feeder). schedule_jobs writes one in the transaction that schedules the
// keys; the feed job is the populate-worker's own, inserted by SQL (FeedJobEnsure) and worked by
// the populate_feed queue of every replica.
type FeedArgs struct {
	// Table is the computed table's registered name.
	Table string `json:"table"`
}

// Kind is the job kind of FeedArgs.
func (FeedArgs) Kind() string { return "populate_feed" }

// InsertOpts pins FeedArgs to its queue. It has no UniqueOpts: River's uniqueness would count a
// running feed job, which may have looked for keys before the caller's committed; FeedJobEnsure
// skips the insert only when a feed job of the table is waiting.
func (FeedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.QueuePopulateFeed, MaxAttempts: 5}
}

// feedOpts are the River insert options of every populate_feed job.
var feedOpts = FeedArgs{}.InsertOpts()

// feedChunk is the most keys one feeder transaction enqueues.
const feedChunk = 1000

// FeedResult says what one feed pass did.
type FeedResult struct {
	// Enqueued counts the populate_make jobs the pass enqueued.
	Enqueued int
	// More is true when the pass stopped before running out of keys to enqueue, because
	// Config.FeedAhead makes of the table were waiting in River or the pass had enqueued that
	// many: the feeder comes back after Config.FeedEvery.
	More bool
}

// Feed is one pass of the feeder over the table registered as name: while fewer than
// Config.FeedAhead of its populate_make jobs wait in River, it enqueues the makes of scheduled
// keys that have none, a chunk (at most 1,000) per transaction that marks those keys enqueued and
// inserts their River jobs, and notifies the make producers after each commit. It ends when no
// key is left to enqueue, or with More when the waiting makes reached FeedAhead or the pass has
// enqueued FeedAhead makes.
func (e *Engine) Feed(ctx context.Context, name string) (FeedResult, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return FeedResult{}, err
	}
	var res FeedResult
	for {
		if res.Enqueued >= e.cfg.FeedAhead {
			// Makes drain as fast as this pass feeds them: end the pass (a feed job's time is
			// bounded) and come back after FeedEvery, as when they wait.
			res.More = true
			return res, nil
		}
		waiting, err := queries.MakesWaiting(ctx, e.pool, dbsqlc.MakesWaitingParams{
			Queue: makeOpts.Queue, Kind: queue.PopulateMakeArgs{}.Kind(), TableName: t.Name, MaxJobs: int32(e.cfg.FeedAhead),
		})
		if err != nil {
			return res, fmt.Errorf("feed %s: count waiting makes: %w", t.Name, err)
		}
		room := e.cfg.FeedAhead - int(waiting)
		if room <= 0 {
			res.More = true
			return res, nil
		}
		n, err := queries.MakesEnqueue(ctx, e.pool, makesEnqueueParams(t.Name, min(room, feedChunk)))
		if err != nil {
			return res, fmt.Errorf("feed %s: enqueue makes: %w", t.Name, err)
		}
		if n == 0 {
			return res, nil
		}
		res.Enqueued += int(n)
		e.cfg.Metrics.fed(t.Name, int(n))
		// The makes were written by SQL (one statement, as schedule_jobs wrote them before the
		// feeder), so wake their producers as River would, after the commit.
		_ = queue.NotifyInserted(ctx, e.pool, queue.PopulateWorker, makeOpts.Queue)
	}
}

// makesEnqueueParams is one chunk of at most n keys of table (MakesEnqueue).
func makesEnqueueParams(table string, n int) dbsqlc.MakesEnqueueParams {
	return dbsqlc.MakesEnqueueParams{
		TableName: table, MaxKeys: int32(n),
		Kind: queue.PopulateMakeArgs{}.Kind(), Queue: makeOpts.Queue, MaxAttempts: int16(makeOpts.MaxAttempts),
	}
}

// ensureFeed writes table's feed job on tx unless one is waiting (FeedJobEnsure) and reports
// whether it wrote one; the caller notifies the feed queue after its commit.
func ensureFeed(ctx context.Context, tx postgres.DBTX, table string) (bool, error) {
	n, err := queries.FeedJobEnsure(ctx, tx, dbsqlc.FeedJobEnsureParams{
		TableName: table, Kind: FeedArgs{}.Kind(), Queue: feedOpts.Queue, MaxAttempts: int16(feedOpts.MaxAttempts),
	})
	if err != nil {
		return false, fmt.Errorf("enqueue feed job of %s: %w", table, err)
	}
	return n > 0, nil
}

// ensureFeeders writes on tx a feed job for every table that has scheduled keys without a make
// job and no feed job waiting, and returns how many it wrote. It is the reclaim pass's safety
// net: a feed job lost with its replica (River shows it running until MAKE_TIMEOUT + 1 m),
// discarded after its attempts, or a feed pass that found the keys locked by a transaction that
// then rolled back, leaves keys no feed job would enqueue; within a reclaim period they get one.
func (e *Engine) ensureFeeders(ctx context.Context, tx pgx.Tx) (int, error) {
	names := make([]string, 0, len(e.tables.All()))
	for _, t := range e.tables.All() {
		names = append(names, t.Name)
	}
	tables, err := queries.TablesToFeed(ctx, tx, names)
	if err != nil {
		return 0, fmt.Errorf("find tables to feed: %w", err)
	}
	n := 0
	for _, table := range tables {
		wrote, err := ensureFeed(ctx, tx, table)
		if err != nil {
			return 0, err
		}
		if wrote {
			n++
		}
	}
	return n, nil
}

// defaultFeedAhead and defaultFeedEvery are Config.FeedAhead's and Config.FeedEvery's defaults.
const (
	defaultFeedAhead = 5000
	defaultFeedEvery = 500 * time.Millisecond
)

// Unfeed ends a background make's River job (end, on the transaction) that did not make its key,
// and gives the key, when it is still scheduled, back to the feeder in the same transaction,
// with a feed job waiting for it. Without it, a make job River discards after its attempts (each
// failing before the key's reservation) would leave the key scheduled, marked enqueued, with no
// job to make it and no feeder to give it one.
func (e *Engine) Unfeed(ctx context.Context, table, hash string, end func(context.Context, pgx.Tx) error) error {
	var feed bool
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		n, err := queries.JobUnenqueue(ctx, tx, dbsqlc.JobUnenqueueParams{TableName: table, KeyHash: hash})
		if err != nil {
			return fmt.Errorf("give %s/%s back to the feeder: %w", table, hash, err)
		}
		if n > 0 {
			if feed, err = ensureFeed(ctx, tx, table); err != nil {
				return err
			}
		}
		return end(ctx, tx)
	})
	if err != nil || !feed {
		return err
	}
	e.wakeFeeders(ctx)
	return nil
}

// wakeFeeders wakes the feed producers after a commit that wrote a feed job: the job was written
// by SQL (FeedJobEnsure), not River's insert, so nothing else notifies them, and inside the
// transaction the notification would come before the job is visible (queue.NotifyInserted says
// why). A lost notification costs only the producers' next poll, so its error does not undo what
// committed.
func (e *Engine) wakeFeeders(ctx context.Context) {
	_ = queue.NotifyInserted(ctx, e.pool, queue.PopulateWorker, feedOpts.Queue)
}
