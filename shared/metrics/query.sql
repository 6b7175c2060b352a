-- name: RiverJobCountList :many
-- Each queue's jobs in each of the states, each count a range of River's fetching index on
-- (state, queue, priority, scheduled_at, id) capped at max_jobs: the ORDER BY on the index's
-- columns makes Postgres walk the index instead of scanning the table for every state.
SELECT q.name AS queue, s::text AS state, (SELECT count(*) FROM (
        SELECT 1 FROM river_job j WHERE j.state = s::river_job_state AND j.queue = q.name
        ORDER BY j.state, j.queue, j.priority, j.scheduled_at, j.id LIMIT sqlc.arg(max_jobs)) x)::float8 AS jobs
    FROM river_queue q, unnest(sqlc.arg(states)::text[]) s;

-- name: RiverOldestAgeList :many
-- How long the job River would hand out next in each queue has been in state (available): one
-- index lookup per queue, 0 when none waits.
SELECT q.name AS queue, coalesce(extract(epoch FROM now() - (
        SELECT j.scheduled_at FROM river_job j
        WHERE j.state = sqlc.arg(state)::text::river_job_state AND j.queue = q.name AND j.scheduled_at <= now()
        ORDER BY j.priority, j.scheduled_at, j.id LIMIT 1)), 0)::float8 AS age
    FROM river_queue q;
