package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: a pool, a connection (NotifyInserted must not run inside the
// inserting transaction: it is meant for after its commit).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertTopic is the LISTEN/NOTIFY topic River's producers listen on for inserts, on channel
// "<schema>.river_insert", with payload {"queue": name} (River's notifier and insert path; a
// producer of that queue that hears it fetches at once, within its FetchCooldown).
const insertTopic = "river_insert"

// NotifyInserted tells the producers of queues in service svc's schema that jobs were inserted,
// as River does inside the inserting transaction, but in a statement of its own after that
// transaction committed and with an asynchronous commit.
//
// Why: Postgres serialises the commits of transactions that NOTIFY (a database-wide lock taken
// at commit) and holds that lock through the commit's WAL flush. A producer whose every
// transaction notifies inside it (NewInserter's do, every inserting transaction) so commits one
// transaction per WAL flush however many connections it has: 40–50 a second on a machine whose
// flush takes 20 ms. Notifying afterwards, without waiting for the flush (losing a
// notification in a crash costs only a poll interval), holds the lock for microseconds.
// Producers that notify this way insert with NewQuietInserter.
//
// The channel and payload are River's (see insertTopic); if a River release changed them, the
// producers would miss these notifications and find the jobs at their next poll instead.
func NotifyInserted(ctx context.Context, db Execer, svc Service, queues ...string) error {
	return notifyInserted(ctx, db, svc.Schema(), queues)
}

func notifyInserted(ctx context.Context, db Execer, schema string, queues []string) error {
	if len(queues) == 0 {
		return nil
	}
	queues = slices.Compact(slices.Sorted(slices.Values(queues)))
	payloads := make([]string, len(queues))
	for i, q := range queues {
		b, err := json.Marshal(map[string]string{"queue": q})
		if err != nil {
			return err
		}
		payloads[i] = string(b)
	}
	_, err := db.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p) FROM unnest($2::text[]) p`,
		schema+"."+insertTopic, payloads)
	if err != nil {
		return fmt.Errorf("notify %s of inserts into %v: %w", schema, queues, err)
	}
	return nil
}

// Announcer sends NotifyInserted's notifications from a goroutine of its own (Run), so that the
// transaction that inserted the jobs need not wait for them, and coalesces them: the queues
// announced while a notification is being sent go out together in the next one. A producer
// whose many transactions insert into the same few queues so sends one notification per round
// trip instead of one per transaction, and each of those statements' commits queues for
// Postgres's database-wide notification lock. What is announced before Run sends it may be lost
// (Run ended, the statement failed): that costs only the consumers' next poll, as for a lost
// notification.
type Announcer struct {
	db     Execer
	schema string
	logger *slog.Logger
	// Interval is the least time between two notifications: what is announced sooner after the
	// last one waits for it to pass and goes out with the rest announced meanwhile. Zero sends as
	// soon as the last notification is out.
	Interval time.Duration

	mu      sync.Mutex
	pending []string
	wake    chan struct{}
}

// NewAnnouncer returns an Announcer of inserts into queues of service svc's schema, sending on
// db once Run runs; logger hears of the notifications that failed.
func NewAnnouncer(db Execer, svc Service, logger *slog.Logger) *Announcer {
	return &Announcer{db: db, schema: svc.Schema(), logger: logger, wake: make(chan struct{}, 1)}
}

// Announce queues a notification of inserts into queues, committed already; it never blocks.
func (a *Announcer) Announce(queues ...string) {
	if len(queues) == 0 {
		return
	}
	a.mu.Lock()
	a.pending = append(a.pending, queues...)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Run sends what is announced until ctx ends.
func (a *Announcer) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		}
		a.mu.Lock()
		queues := a.pending
		a.pending = nil
		a.mu.Unlock()
		sent := time.Now()
		sendCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := notifyInserted(sendCtx, a.db, a.schema, queues); err != nil && ctx.Err() == nil {
			a.logger.WarnContext(ctx, "announce inserted jobs", "queues", queues, "error", err)
		}
		cancel()
		if err := sleepCtx(ctx, time.Until(sent.Add(a.Interval))); err != nil {
			return nil
		}
	}
}

// sleepCtx waits for d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
