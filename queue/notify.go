package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
