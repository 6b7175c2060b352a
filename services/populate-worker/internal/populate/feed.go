package populate

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
)

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
	t, err := e.Table(ctx, name)
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
	if err := e.enqueueMakes(unsampled(ctx), tx, table, Background, hashes); err != nil {
		return 0, err
	}
	return len(hashes), nil
}

// makeOpts are the River insert options of every populate_make job.
var makeOpts = queue.PopulateMakeArgs{}.InsertOpts()
