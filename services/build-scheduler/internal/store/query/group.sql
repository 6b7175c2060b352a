-- name: GroupInsert :one
INSERT INTO groups (name, remaining) VALUES (@name, @remaining) RETURNING id;

-- name: GroupGet :one
-- GroupGet reads a group with its jobs by state: those recorded when it settled, or for an open
-- group its jobs counted now (coalesce runs the subquery only when final_counts is null).
SELECT g.id, g.name, g.state::text AS state, g.cancel_requested, g.created_at, g.updated_at, g.finished_at,
    coalesce(g.final_counts, (SELECT jsonb_object_agg(state, n) FROM (
        SELECT state::text, count(*) AS n FROM job_graph WHERE group_id = g.id GROUP BY state) c), '{}')::jsonb AS counts
FROM groups g
WHERE g.id = @id;

-- name: GroupList :many
-- GroupList reads a page of groups with their jobs by state as GroupGet does: a settled group's
-- from its row, so only the page's open groups have their jobs counted (migration 00007).
SELECT g.id, g.name, g.state::text AS state, g.cancel_requested, g.created_at, g.updated_at, g.finished_at,
    coalesce(g.final_counts, (SELECT jsonb_object_agg(state, n) FROM (
        SELECT state::text, count(*) AS n FROM job_graph WHERE group_id = g.id GROUP BY state) c), '{}')::jsonb AS counts
FROM groups g
WHERE (@state::text = '' OR g.state::text = @state::text) AND (@before::bigint = 0 OR g.id < @before::bigint)
ORDER BY g.id DESC LIMIT @max_rows;

-- name: GroupGetState :one
SELECT state::text FROM groups WHERE id = @id;

-- name: GroupGetStateForUpdate :one
SELECT state::text FROM groups WHERE id = @id FOR NO KEY UPDATE;

-- name: GroupListActive :many
SELECT id FROM groups WHERE state IN ('queued', 'dispatching') ORDER BY id;

-- name: GroupDispatching :exec
-- GroupDispatching marks a queued group dispatching: a build of it has run.
UPDATE groups SET state = 'dispatching', updated_at = clock_timestamp() WHERE id = @id AND state = 'queued';

-- name: GroupCancel :one
-- GroupCancel marks a group cancelled; with nothing running it is canceled at once, its jobs'
-- counts by state recorded as GroupSettle records them.
UPDATE groups g SET cancel_requested = true, remaining = @running::int, updated_at = clock_timestamp(),
    state = CASE WHEN @running::int = 0 THEN 'canceled' ELSE g.state END::group_state,
    finished_at = CASE WHEN @running::int = 0 THEN clock_timestamp() END,
    final_counts = CASE WHEN @running::int = 0 THEN coalesce((SELECT jsonb_object_agg(state, n) FROM (
        SELECT state::text, count(*) AS n FROM job_graph WHERE group_id = g.id GROUP BY state) c), '{}') END
WHERE g.id = @id AND g.state IN ('queued', 'dispatching')
RETURNING g.state::text;

-- name: GroupRetry :one
UPDATE groups SET state = 'dispatching', cancel_requested = false, failed = 0, finished_at = NULL,
    final_counts = NULL, remaining = @remaining::int, updated_at = clock_timestamp(),
    watch_changed_at = clock_timestamp()
WHERE id = @id AND state IN ('failed', 'canceled') RETURNING state::text;

-- name: GroupSettle :one
-- GroupSettle closes a group whose stripes are all at zero: canceled when it was cancelled or,
-- with no job failed, when a job of it was cancelled alone (River UI's Cancel on a running
-- build); failed when a job failed; complete otherwise. It records the jobs' counts by state it
-- reads to decide, which the group's answers read from then on (final_counts, migration 00007).
UPDATE groups g SET remaining = 0, failed = c.failed, updated_at = clock_timestamp(),
    state = CASE WHEN g.cancel_requested THEN 'canceled' WHEN c.failed > 0 THEN 'failed'
        WHEN c.cancelled > 0 THEN 'canceled' ELSE 'complete' END::group_state,
    finished_at = clock_timestamp(), final_counts = c.counts
FROM (SELECT coalesce(sum(n) FILTER (WHERE state IN ('job_failed', 'dependency_failed')), 0)::int AS failed,
        coalesce(sum(n) FILTER (WHERE state = 'cancel_complete'), 0)::int AS cancelled,
        coalesce(jsonb_object_agg(state, n), '{}') AS counts
    FROM (SELECT state::text, count(*) AS n FROM job_graph WHERE group_id = @id GROUP BY state) s) c
WHERE g.id = @id AND NOT EXISTS (SELECT FROM group_stripes WHERE group_id = @id AND remaining > 0)
RETURNING g.state::text;

-- name: GroupResettle :one
-- GroupResettle recomputes an open group's remaining and failed from its jobs and settles it when
-- nothing is left, recording its jobs' counts by state as GroupSettle does; with work left they
-- stay cleared.
WITH c AS (
    SELECT coalesce(sum(n) FILTER (WHERE state NOT IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete')), 0)::int AS remaining,
        coalesce(sum(n) FILTER (WHERE state IN ('job_failed', 'dependency_failed')), 0)::int AS failed,
        coalesce(sum(n) FILTER (WHERE state = 'cancel_complete'), 0)::int AS cancelled,
        coalesce(jsonb_object_agg(state, n), '{}') AS counts
    FROM (SELECT state::text, count(*) AS n FROM job_graph WHERE group_id = @id GROUP BY state) s
)
UPDATE groups g SET remaining = c.remaining, failed = c.failed, updated_at = clock_timestamp(),
    state = CASE WHEN c.remaining > 0 THEN g.state
        WHEN g.cancel_requested THEN 'canceled' WHEN c.failed > 0 THEN 'failed'
        WHEN c.cancelled > 0 THEN 'canceled' ELSE 'complete' END::group_state,
    finished_at = CASE WHEN c.remaining > 0 THEN NULL ELSE clock_timestamp() END,
    final_counts = CASE WHEN c.remaining > 0 THEN NULL ELSE c.counts END
FROM c WHERE g.id = @id AND g.state IN ('queued', 'dispatching')
RETURNING g.state::text;

-- name: GroupWatchList :many
SELECT g.id, g.watch_counts, g.watch_changed_at,
    (extract(epoch FROM clock_timestamp() - g.watch_changed_at) * 1000)::bigint AS idle_ms,
    coalesce((SELECT jsonb_object_agg(state, n) FROM (
        SELECT state::text, count(*) AS n FROM job_graph WHERE group_id = g.id GROUP BY state) c), '{}')::jsonb AS counts,
    ARRAY(SELECT DISTINCT j.target FROM job_graph j WHERE j.group_id = g.id AND j.state = 'ready'
        AND NOT EXISTS (SELECT FROM target_workers w WHERE w.target = j.target
            AND w.seen_at > clock_timestamp() - sqlc.arg(stall_after_ms)::bigint * interval '1 millisecond') ORDER BY 1)::text[] AS unserved
FROM groups g WHERE g.state IN ('queued', 'dispatching') ORDER BY g.id;

-- name: GroupWatchRemember :exec
UPDATE groups SET watch_counts = @counts::text,
    watch_changed_at = CASE WHEN watch_counts = @counts::text THEN watch_changed_at ELSE clock_timestamp() END
WHERE id = @id;

-- name: GroupReopen :execrows
-- GroupReopen opens a settled group again for a job River UI's Retry runs again; GroupResettle
-- then recounts it.
UPDATE groups SET state = 'dispatching', cancel_requested = false, failed = 0, finished_at = NULL,
    final_counts = NULL, updated_at = clock_timestamp(), watch_changed_at = clock_timestamp()
WHERE id = @id AND state IN ('failed', 'canceled');

-- name: GroupCountByState :many
-- GroupCountByState counts the groups by state: a gauge read at scrape time (work.Gauges); the
-- state list is a parameter (jobgraph.GroupStates), so every state reports a series, zero included.
SELECT s::text AS state, count(g.id)::float8 AS groups FROM unnest(@group_states::text[]) s
LEFT JOIN groups g ON g.state::text = s GROUP BY s;
