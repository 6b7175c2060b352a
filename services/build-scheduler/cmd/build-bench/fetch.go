package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/queue"
)

// fetchCooldown is the shortest time between two reads of river_job while the slots have builds
// enough, the build-workers' BUILD_WORKER_FETCH_COOLDOWN: the reads stand in for River's fetches
// and should not cost the database more than those do.
const fetchCooldown = 5 * time.Millisecond

// fetcher stands in for River's fetch: it hands the slots the available build_run River jobs of
// one group with the args a build-worker gets, in River's order (priority, then scheduled_at,
// then id). It
// reads river_job and never writes it, since River's tables are written only through River's
// client, so the rows it has handed out stay available and it tells them apart itself.
//
// Reading only the rows above the highest id read so far would miss some: a report draws its
// River jobs' ids from a sequence, and a report that drew a lower id may commit after one that
// drew a higher. So every read starts at low, below which every committed row has been read, and
// skips the rows it has read already. low moves up to the highest id a read saw once every report
// that had begun when that read ended has ended too: the rows below that id were inserted by
// reports that had begun before the read (ids only grow), so by then each is committed or rolled
// back, and a read starting after that sees the committed ones.
type fetcher struct {
	pool  *pgxpool.Pool
	queue string
	slots int

	mu      sync.Mutex
	ready   fetchOrder     // read and not handed out yet
	read    map[int64]bool // ids above low read already
	low     int64
	highest int64
	marks   []readMark
	issued  int64          // tickets handed out with builds, one per report
	open    map[int64]bool // tickets whose reports have not ended
	reads   int

	ended chan struct{} // a report ended, so there may be new rows to read
	short chan struct{} // the slots have fewer builds left than there are slots
}

// readMark is what a read lets low move up to, id, once every ticket up to issued has ended.
type readMark struct{ id, issued int64 }

// fetched is a build_run River job as River's fetch would hand it to a worker.
type fetched struct {
	id          int64
	priority    int
	scheduledAt time.Time
	args        queue.BuildRunArgs
}

// newFetcher starts above every River job that exists already: the group to fetch for is
// submitted after.
func newFetcher(ctx context.Context, pool *pgxpool.Pool, queueName string, slots int) (*fetcher, error) {
	f := &fetcher{pool: pool, queue: queueName, slots: slots, read: map[int64]bool{}, open: map[int64]bool{},
		ended: make(chan struct{}, 1), short: make(chan struct{}, 1)}
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river_job`).Scan(&f.low); err != nil {
		return nil, fmt.Errorf("read the highest River job id: %w", err)
	}
	f.highest = f.low
	return f, nil
}

// take hands out the next build in River's order, with the ticket its report ends (end); false
// when none is ready.
func (f *fetcher) take() (fetched, int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ready.Len() == 0 {
		return fetched{}, 0, false
	}
	b := heap.Pop(&f.ready).(fetched)
	f.issued++
	f.open[f.issued] = true
	if f.ready.Len() < f.slots {
		signal(f.short)
	}
	return b, f.issued, true
}

// end says that the report of ticket has committed or given up.
func (f *fetcher) end(ticket int64) {
	f.mu.Lock()
	delete(f.open, ticket)
	f.mu.Unlock()
	signal(f.ended)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default: // one is pending already
	}
}

// run reads until ctx ends: again after each report ends (it may have inserted River jobs), at
// once when the slots are short of builds, else after the cooldown, as River's fetch does.
func (f *fetcher) run(ctx context.Context) error {
	for {
		if err := f.readOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-f.ended:
		}
		f.mu.Lock()
		enough := f.ready.Len() >= f.slots
		f.mu.Unlock()
		if enough {
			select {
			case <-ctx.Done():
				return nil
			case <-f.short:
			case <-time.After(fetchCooldown):
			}
		}
	}
}

// readOnce reads the rows above low and queues those it has not read yet; then low moves up as
// far as the reports that have ended allow (see fetcher).
func (f *fetcher) readOnce(ctx context.Context) error {
	f.mu.Lock()
	from, settled := f.low, f.settled()
	f.mu.Unlock()
	rows, err := f.pool.Query(ctx, `SELECT id, priority, scheduled_at, args FROM river_job
		WHERE id > $1 AND queue = $2 AND kind = 'build_run' AND state = 'available' ORDER BY id`, from, f.queue)
	if err != nil {
		return fmt.Errorf("read build_run River jobs above %d: %w", from, err)
	}
	defer rows.Close()
	var got []fetched
	for rows.Next() {
		var (
			b    fetched
			args []byte
		)
		if err := rows.Scan(&b.id, &b.priority, &b.scheduledAt, &args); err != nil {
			return fmt.Errorf("read build_run River jobs above %d: %w", from, err)
		}
		if err := json.Unmarshal(args, &b.args); err != nil {
			return fmt.Errorf("decode the args of River job %d: %w", b.id, err)
		}
		got = append(got, b)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read build_run River jobs above %d: %w", from, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	for _, b := range got {
		if !f.read[b.id] {
			f.read[b.id] = true
			heap.Push(&f.ready, b)
		}
		f.highest = max(f.highest, b.id)
	}
	f.marks = append(f.marks, readMark{id: f.highest, issued: f.issued})
	f.low = settled
	for id := range f.read {
		if id <= settled {
			delete(f.read, id)
		}
	}
	return nil
}

// settled is the highest id that low may move up to once the read starting now has been made:
// that of the latest mark whose reports have all ended. It drops the marks it used. f.mu is held.
func (f *fetcher) settled() int64 {
	oldest := f.issued + 1
	for t := range f.open {
		oldest = min(oldest, t)
	}
	low, kept := f.low, f.marks[:0]
	for _, m := range f.marks {
		if m.issued < oldest {
			low = max(low, m.id)
		} else {
			kept = append(kept, m)
		}
	}
	f.marks = kept
	return low
}

// fetchOrder is a heap of builds in River's fetch order.
type fetchOrder []fetched

func (o fetchOrder) Len() int { return len(o) }
func (o fetchOrder) Less(i, j int) bool {
	a, b := o[i], o[j]
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if !a.scheduledAt.Equal(b.scheduledAt) {
		return a.scheduledAt.Before(b.scheduledAt)
	}
	return a.id < b.id
}
func (o fetchOrder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o *fetchOrder) Push(x any)   { *o = append(*o, x.(fetched)) }
func (o *fetchOrder) Pop() any {
	old := *o
	b := old[len(old)-1]
	*o = old[:len(old)-1]
	return b
}
