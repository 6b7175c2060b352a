-- name: RedispatchLock :exec
SELECT pg_advisory_xact_lock(hashtext('build_scheduler.redispatch'));

-- name: DispatchTokenCountMissing :many
-- DispatchTokenCountMissing compares, per target, the jobs ready for longer than the grace with
-- the dispatch tokens still waiting in the target's queue.
WITH stale AS (
    SELECT target, count(*) AS ready FROM job_graph
    WHERE state = 'ready' AND updated_at < clock_timestamp() - sqlc.arg(grace_ms)::bigint * interval '1 millisecond'
    GROUP BY target
)
SELECT s.target, (s.ready - (
    SELECT count(*) FROM river_job r WHERE r.kind = 'build_run' AND r.queue = 'build_' || s.target
        AND r.state IN ('available', 'pending', 'scheduled', 'retryable')
        AND r.scheduled_at < clock_timestamp() + sqlc.arg(grace_ms)::bigint * interval '1 millisecond'))::bigint AS missing
FROM stale s;
