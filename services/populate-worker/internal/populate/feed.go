package populate

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"golang.org/x/sync/errgroup"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
)

// FeedArgs asks the populate-worker to enqueue the populate_make jobs of a table's scheduled keys
// that have none yet (the feeder). schedule_jobs inserts one in the transaction that schedules
// the keys; the feed job is the populate-worker's own, worked by the populate_feed queue of every
// replica.
type FeedArgs struct {
	// Table is the computed table's registered name.
	Table string `json:"table"`
}

// Kind is the job kind of FeedArgs.
func (FeedArgs) Kind() string { return "populate_feed" }

// InsertOpts pins FeedArgs to its queue. It has no UniqueOpts: River's uniqueness counts a running
// job, and a running feed job may have looked for keys before the caller's committed, or belong
// to a replica that died; ensureFeed skips the insert only when a feed job of the table is
// waiting.
func (FeedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.QueuePopulateFeed, MaxAttempts: 5}
}

// feedChunk is the most keys one feeder transaction enqueues.
const feedChunk = 1000

// FeedResult says what one feed pass did.
type FeedResult struct {
	// Enqueued counts the populate_make jobs the pass enqueued.
	Enqueued int
	// More is true when the pass stopped before running out of keys to enqueue, because
	// Config.FeedAhead makes of the table were waiting in River, counting those it enqueued: the
	// feeder comes back after Config.FeedEvery.
	More bool
}

// Feed is one pass of the feeder over the table registered as name: it counts the table's
// populate_make jobs waiting in River and, up to Config.FeedAhead of them, enqueues the makes of
// scheduled keys that have none, a chunk (at most 1,000) per transaction that marks those keys
// enqueued and inserts their River jobs. It ends when no key is left to enqueue, or with More
// when it filled the room FeedAhead left: makes that drain meanwhile are replaced by the next
// pass, after Config.FeedEvery. (Counting once per pass, not per chunk: the count reads up to
// FeedAhead index entries, and per chunk it cost the feeder a fifth of its rate.)
func (e *Engine) Feed(ctx context.Context, name string) (FeedResult, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return FeedResult{}, err
	}
	waiting, err := queries.MakesWaiting(ctx, e.pool, dbsqlc.MakesWaitingParams{
		Queue: makeOpts.Queue, Kind: queue.PopulateMakeArgs{}.Kind(), TableName: t.Name, MaxJobs: int32(e.cfg.FeedAhead),
	})
	if err != nil {
		return FeedResult{}, fmt.Errorf("feed %s: count waiting makes: %w", t.Name, err)
	}
	f := &feedPass{room: e.cfg.FeedAhead - int(waiting)}
	g, gctx := errgroup.WithContext(ctx)
	for range feedParallel {
		g.Go(func() error { return f.run(gctx, e, t.Name) })
	}
	err = g.Wait()
	res := FeedResult{Enqueued: f.enqueued, More: f.room <= 0}
	if err != nil {
		return res, fmt.Errorf("feed %s: %w", t.Name, err)
	}
	return res, nil
}

// feedParallel is how many chunks one feed pass enqueues at once. A chunk is two round trips
// that each wait on the other (its keys are marked, then their jobs copied in); two at a time
// keep the server busy through both, and SKIP LOCKED keeps them apart.
const feedParallel = 2

// feedPass is the room left and the makes enqueued by one pass's concurrent chunks.
type feedPass struct {
	mu       sync.Mutex
	room     int
	enqueued int
}

// run enqueues chunks until the pass has no room left or a chunk finds fewer keys than it asked
// for (the rest are taken, or locked by another chunk that enqueues them).
func (f *feedPass) run(ctx context.Context, e *Engine, table string) error {
	for {
		f.mu.Lock()
		want := min(f.room, feedChunk)
		f.room -= want
		f.mu.Unlock()
		if want <= 0 {
			return nil
		}
		var got int
		err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			var err error
			got, err = e.feedChunk(ctx, tx, table, want)
			return err
		})
		if err != nil {
			got = 0
		}
		f.mu.Lock()
		f.room += want - got
		f.enqueued += got
		f.mu.Unlock()
		e.cfg.Metrics.fed(table, got)
		if err != nil || got < want {
			return err
		}
	}
}

// feedChunk marks up to n scheduled keys of table whose make is not enqueued (MakesMark) and
// inserts their populate_make jobs on tx with River's COPY insert, returning how many.
func (e *Engine) feedChunk(ctx context.Context, tx pgx.Tx, table string, n int) (int, error) {
	hashes, err := queries.MakesMark(ctx, tx, dbsqlc.MakesMarkParams{TableName: table, MaxKeys: int32(n)})
	if err != nil {
		return 0, fmt.Errorf("mark keys enqueued: %w", err)
	}
	if err := e.enqueueMakes(ctx, tx, table, Background, hashes); err != nil {
		return 0, err
	}
	return len(hashes), nil
}

// ensureFeed inserts table's feed job on tx unless one is waiting (FeedJobWaiting) and reports
// whether it inserted one. Two transactions doing so at once may both insert one: a second feed
// job is harmless (the feeder's chunks lock what they enqueue).
func (e *Engine) ensureFeed(ctx context.Context, tx pgx.Tx, table string) (bool, error) {
	waiting, err := queries.FeedJobWaiting(ctx, tx, dbsqlc.FeedJobWaitingParams{TableName: table, Kind: FeedArgs{}.Kind()})
	if err != nil {
		return false, fmt.Errorf("look for the feed job of %s: %w", table, err)
	}
	if waiting {
		return false, nil
	}
	if _, err := e.river.InsertTx(ctx, tx, FeedArgs{Table: table}, nil); err != nil {
		return false, fmt.Errorf("enqueue feed job of %s: %w", table, err)
	}
	return true, nil
}

// ensureFeeders inserts on tx a feed job for every table that has scheduled keys without a make
// job and no feed job waiting, and returns how many it inserted. It is the reclaim pass's safety
// net: a feed job lost with its replica (River shows it running until it rescues it, FEED_TIMEOUT
// plus up to 30 s later), discarded after its attempts, cancelled or deleted in River UI, or a
// feed pass that found the keys locked by a transaction that then rolled back, leaves keys no
// feed job would enqueue; within a reclaim period they get one.
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
		wrote, err := e.ensureFeed(ctx, tx, table)
		if err != nil {
			return 0, err
		}
		if wrote {
			n++
		}
	}
	return n, nil
}

// unfeed gives the key of hash, when it is still scheduled and marked enqueued, back to the
// feeder on tx, with a feed job waiting for it: its make job ends without making it (GiveUp, a
// stopped run's make), and without this the key would have no job to make it and no feeder to
// give it one until the reclaim sweep.
func (e *Engine) unfeed(ctx context.Context, tx pgx.Tx, table, hash string) error {
	n, err := queries.JobUnenqueue(ctx, tx, dbsqlc.JobUnenqueueParams{TableName: table, KeyHash: hash})
	if err != nil {
		return fmt.Errorf("give %s/%s back to the feeder: %w", table, hash, err)
	}
	if n > 0 {
		_, err = e.ensureFeed(ctx, tx, table)
	}
	return err
}
