-- The scheduler's gauges, read at scrape time (see Gauges). The state lists are parameters
-- (jobgraph.JobStates, GroupStates), so every state reports a series, zero included.

-- name: JobCountOpen :many
-- JobCountOpen counts the jobs of open groups by state and target, through the groups' state
-- index and the jobs' group index; every target with a worker reports every state.
WITH open AS (
    SELECT j.state::text AS state, j.target FROM groups g JOIN job_graph j ON j.group_id = g.id
    WHERE g.state = ANY(CAST(@open_states::text[] AS group_state[]))
), targets AS (SELECT target FROM target_workers UNION SELECT target FROM open)
SELECT s::text AS state, t.target, count(o.target)::float8 AS jobs FROM targets t
CROSS JOIN unnest(@job_states::text[]) s
LEFT JOIN open o ON o.state = s AND o.target = t.target
GROUP BY s, t.target;

-- name: GroupCountByState :many
SELECT s::text AS state, count(g.id)::float8 AS groups FROM unnest(@group_states::text[]) s
LEFT JOIN groups g ON g.state::text = s GROUP BY s;

-- name: ReadyJobOldestAge :many
-- ReadyJobOldestAge is how long the oldest ready job of each target served by a worker has
-- waited, in seconds; 0 when none waits.
SELECT t.target, coalesce(extract(epoch FROM now() - (
        SELECT min(j.updated_at) FROM job_graph j WHERE j.target = t.target AND j.state = 'ready')), 0)::float8 AS seconds
FROM (SELECT DISTINCT target FROM target_workers) t;

-- name: WorkerCountRecent :many
-- WorkerCountRecent counts the build workers that polled each target within the last two minutes.
SELECT target, count(*) FILTER (WHERE seen_at > now() - interval '2 minutes')::float8 AS workers
FROM target_workers GROUP BY target;
