package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
)

// fillGroupsSQL writes n groups of 3 to 10 jobs each, oldest first, as the scheduler leaves
// them: most complete, one in 14 failed (a job failed, the one after it dependency_failed), one
// in 33 cancelled, and open ones (dispatching: two jobs complete, one running, the rest waiting)
// among the newest five and one in 1,000 older ones, as a long group would be. Each job
// depends on the one before it. The settled ones are still dispatching with nothing left to
// run: fillGroups settles them with the scheduler's own statement. Every group has its 64
// stripe counters, as SubmitTx writes them.
const fillGroupsSQL = `
WITH g AS (
    INSERT INTO groups (name, remaining, state, cancel_requested, created_at, updated_at)
    SELECT 'bench-' || i, 0, 'dispatching', i % 33 = 0 AND i % 14 <> 0 AND NOT (i > $1::int - 5 OR i % 1000 = 0),
        now() - ($1::int - i) * interval '1 minute', now() - ($1::int - i) * interval '1 minute'
    FROM generate_series(1, $1::int) i ORDER BY i
    RETURNING id, name
), k AS (
    SELECT id AS group_id, substr(name, 7)::int AS i, 3 + (substr(name, 7)::int * 7919) % 8 AS n FROM g
), j AS (
    SELECT k.group_id, k.i, k.n, s.k, k.group_id * 16 + s.k AS id,
        CASE
            WHEN k.i > $1::int - 5 OR k.i % 1000 = 0 THEN
                CASE WHEN s.k < 2 THEN 'complete' WHEN s.k = 2 THEN 'running' ELSE 'waiting_on_dependency' END
            WHEN k.i % 14 = 0 THEN
                CASE WHEN s.k < k.n - 2 THEN 'complete' WHEN s.k = k.n - 2 THEN 'job_failed' ELSE 'dependency_failed' END
            WHEN k.i % 33 = 0 THEN CASE WHEN s.k < 2 THEN 'complete' ELSE 'cancel_complete' END
            ELSE 'complete'
        END::job_state AS state
    FROM k CROSS JOIN LATERAL generate_series(0, k.n - 1) s(k)
)
INSERT INTO job_graph (id, group_id, name, target, state, command, timeout_ms, dependencies, dependents,
    waiting_on_count, attempt, max_attempts, worker_id, exit_code, started_at, finished_at, fetch_rank)
SELECT id, group_id, 'job-' || k, 'x86_64-linux', state, '{make,all}', 1800000,
    CASE WHEN k > 0 THEN ARRAY[id - 1] ELSE '{}' END, CASE WHEN k < n - 1 THEN ARRAY[id + 1] ELSE '{}' END,
    CASE WHEN state = 'waiting_on_dependency' THEN 1 ELSE 0 END,
    CASE WHEN state IN ('complete', 'job_failed', 'running') THEN 1 ELSE 0 END, 3,
    CASE WHEN state IN ('complete', 'job_failed', 'running') THEN 'bench-worker' END,
    CASE state WHEN 'complete' THEN 0 WHEN 'job_failed' THEN 2 END,
    CASE WHEN state IN ('complete', 'job_failed', 'running') THEN now() END,
    CASE WHEN state NOT IN ('running', 'waiting_on_dependency') THEN now() END, k
FROM j`

const fillStripesSQL = `
INSERT INTO group_stripes (group_id, stripe, remaining)
SELECT g.id, s.stripe, count(j.id) FILTER (WHERE j.state NOT IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete'))
FROM groups g CROSS JOIN generate_series(0, group_stripe_count() - 1) s(stripe)
LEFT JOIN job_graph j ON j.group_id = g.id AND j.id % group_stripe_count() = s.stripe
GROUP BY g.id, s.stripe`

// fillGroups writes n groups (fillGroupsSQL) and settles those with nothing left to run through
// the scheduler's GroupResettle, which counts a group's jobs and records what its settling
// records, 8 at a time. It returns how many groups are open.
func fillGroups(ctx context.Context, pool *pgxpool.Pool, n int) (int, error) {
	if _, err := pool.Exec(ctx, fillGroupsSQL, n); err != nil {
		return 0, fmt.Errorf("fill %d groups: %w", n, err)
	}
	_, err := pool.Exec(ctx, fillStripesSQL)
	if err == nil {
		_, err = pool.Exec(ctx, "SELECT setval(pg_get_serial_sequence('job_graph', 'id'), (SELECT max(id) FROM job_graph))")
	}
	if err != nil {
		return 0, fmt.Errorf("fill the counters of %d groups: %w", n, err)
	}
	rows, _ := pool.Query(ctx, `SELECT g.id FROM groups g WHERE NOT EXISTS (SELECT FROM job_graph j
        WHERE j.group_id = g.id AND j.state NOT IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete'))`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("list the groups to settle: %w", err)
	}
	queries := dbsqlc.New()
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(8)
	for _, id := range ids {
		eg.Go(func() error {
			if _, err := queries.GroupResettle(ctx, pool, id); err != nil {
				return fmt.Errorf("settle group %d: %w", id, err)
			}
			return nil
		})
	}
	return n - len(ids), eg.Wait()
}

// fillSyncEvents writes n of miner-sync's sync events, the floor's rows: successful periodic
// syncs a minute apart, each with its block and hash.
func fillSyncEvents(ctx context.Context, pool *pgxpool.Pool, n int) error {
	_, err := pool.Exec(ctx, `
INSERT INTO miner_sync.sync_events (at, reason, outcome, source, netuid, block, block_hash, entries, upserted, deactivated, skipped)
SELECT now() - ($1::int - i) * interval '1 minute', 'periodic', 'ok', 'pylon+http://pylon:8000 netuid 12', 12,
    4000000 + 5 * i, '0x' || md5(i::text) || md5((i + 1)::text), 256, 256, 0, 0
FROM generate_series(1, $1::int) i ORDER BY i`, n)
	if err != nil {
		return fmt.Errorf("fill %d sync events: %w", n, err)
	}
	return nil
}
