-- name: JobAllocateIDs :many
SELECT nextval(pg_get_serial_sequence('job_graph', 'id'))::bigint AS id FROM generate_series(1, @n::int);

-- name: JobInsertMany :many
INSERT INTO job_graph (id, group_id, name, target, priority, command, payload, env, timeout_ms,
    dependencies, dependents, waiting_on_count, state, max_attempts)
SELECT u.id, @group_id::bigint, u.name, u.target, u.priority,
    ARRAY(SELECT jsonb_array_elements_text(u.command::jsonb)), nullif(u.payload, '')::jsonb, u.env::jsonb, u.timeout_ms,
    ARRAY(SELECT jsonb_array_elements_text(u.deps::jsonb)::bigint),
    ARRAY(SELECT jsonb_array_elements_text(u.dependents::jsonb)::bigint), jsonb_array_length(u.deps::jsonb),
    CASE WHEN jsonb_array_length(u.deps::jsonb) = 0 THEN 'ready' ELSE 'waiting_on_dependency' END::job_state,
    @max_attempts::int
FROM (
    SELECT unnest(@ids::bigint[]) AS id, unnest(@names::text[]) AS name, unnest(@targets::text[]) AS target,
        unnest(@priorities::int[]) AS priority, unnest(@commands::text[]) AS command,
        unnest(@payloads::text[]) AS payload, unnest(@envs::text[]) AS env,
        unnest(@timeouts_ms::bigint[]) AS timeout_ms, unnest(@deps::text[]) AS deps,
        unnest(@dependents::text[]) AS dependents
) u
RETURNING id, name, target, state = 'ready' AS ready;

-- name: JobGet :one
SELECT id, group_id, name, target, state::text AS state, priority, command, env, timeout_ms, dependencies,
    waiting_on_count, attempt, max_attempts, worker_id, as_built, exit_code, error, log_incomplete,
    created_at, started_at, finished_at
FROM job_graph
WHERE id = @id;

-- name: JobListByGroup :many
SELECT id, group_id, name, target, state::text AS state, priority, command, env, timeout_ms, dependencies,
    waiting_on_count, attempt, max_attempts, worker_id, as_built, exit_code, error, log_incomplete,
    created_at, started_at, finished_at
FROM job_graph
WHERE group_id = @group_id AND (@state::text = '' OR state::text = @state::text) AND id > @after::bigint
ORDER BY id LIMIT @max_rows;

-- name: JobGraphPage :many
-- JobGraphPage reads one page of a group's jobs for its picture: what a node and its edges need.
SELECT id, name, target, state::text AS state, dependencies
FROM job_graph
WHERE group_id = @group_id AND id > @after::bigint
ORDER BY id LIMIT @max_rows;

-- name: JobClaim :one
WITH lease_only AS (SELECT set_config('synchronous_commit', 'off', true)), next AS (
    SELECT r.id FROM job_graph r, lease_only WHERE r.target = @target AND r.state = 'ready'
    ORDER BY r.group_id, r.priority DESC, r.id LIMIT 1 FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE job_graph j SET state = 'running', attempt = attempt + 1, lease_token = @lease_token::bigint,
        lease_expires_at = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond', reported = false,
        worker_id = @worker_id::text, started_at = clock_timestamp(), updated_at = clock_timestamp(),
        as_built = NULL, exit_code = NULL, error = NULL
    FROM next WHERE j.id = next.id
    RETURNING j.id, j.group_id, j.name, j.attempt, j.command, j.payload, j.env, j.timeout_ms
), dispatching AS (
    UPDATE groups g SET state = 'dispatching', updated_at = clock_timestamp()
    FROM claimed WHERE g.id = claimed.group_id AND g.state = 'queued'
)
SELECT claimed.id, claimed.group_id, claimed.name, claimed.attempt, claimed.command, claimed.payload,
    claimed.env, claimed.timeout_ms
FROM claimed;

-- name: JobReadyExists :one
-- JobReadyExists says whether target has a ready job, held by another claim or not, in a snapshot
-- of its own: a claim that found nothing tries again while it does (ClaimNext).
SELECT EXISTS (SELECT FROM job_graph WHERE target = @target AND state = 'ready');

-- name: JobHeartbeat :one
-- JobHeartbeat commits with synchronous_commit on, whatever the connection's setting (the
-- build-worker's is off): the worker counts its lease from a heartbeat that returned, so one
-- that a crash of Postgres could lose would have it believe in a lease a third longer than the
-- database's. durable is read in the UPDATE's FROM so that it runs: Postgres skips a CTE that
-- nothing reads.
WITH durable AS (SELECT set_config('synchronous_commit', 'on', true))
UPDATE job_graph SET lease_expires_at = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond'
FROM durable
WHERE id = @id AND lease_token = @lease_token::bigint AND state IN ('running', 'cancel_pending')
RETURNING state::text;

-- name: JobReport :one
-- JobReport applies a worker's report in one statement, guarded by the job being running (or
-- cancel_pending) under the reported attempt and lease token: the job's transition (CTE done),
-- the release of its dependents on success (CTEs waiting and released) and the count of the job
-- off its group stripe (CTE counted). It returns no row when the guard matched nothing.
--
-- waiting and released decrement the counters of the waiting dependents when the job completed
-- and turn those that reach zero ready. The dependents are read by primary key from the job's
-- immutable dependents array and locked in id order first. Row locks serialise two dependencies
-- completing at once: the second UPDATE re-reads the row the first committed, so exactly one of
-- them sees the counter reach zero. The same-group check is written with IS NOT DISTINCT FROM
-- (equal, as group_id is never null) so that it cannot be matched to the (group_id, state)
-- index: given it, the planner reads a fresh group's statistics as a handful of rows and scans
-- every waiting job of the group for each completion (1.1 ms at 10,000 jobs) instead of looking
-- up the dependents by id.
--
-- counted runs after released, in the lock order of the package documentation (job rows before
-- stripes). A failed job is left to settle, which counts it off with its failed dependents once
-- they are locked.
--
-- durable sets synchronous_commit on for the rest of the transaction, whatever the connection's
-- setting (the build-worker's is off): a report that applied commits only once its WAL is on
-- disk, and with it everything committed before it on any connection. done reads it, so a
-- report that changes a row has set it.
WITH durable AS (SELECT set_config('synchronous_commit', 'on', true)), done AS (
    UPDATE job_graph SET
        state = CASE
            WHEN @outcome::text = 'succeeded' THEN 'complete'
            WHEN state = 'cancel_pending' OR @outcome::text = 'cancelled' THEN 'cancel_complete'
            ELSE 'job_failed' END::job_state,
        as_built = nullif(@as_built::text, ''), exit_code = @exit_code::int, error = nullif(@error::text, ''),
        log_incomplete = @log_incomplete::boolean,
        lease_token = NULL, lease_expires_at = NULL,
        finished_at = clock_timestamp(), updated_at = clock_timestamp()
    FROM durable
    WHERE id = @id::bigint AND attempt = @attempt::int AND lease_token = @lease_token::bigint
        AND state IN ('running', 'cancel_pending')
    RETURNING id, group_id, target, state, dependents
), waiting AS MATERIALIZED (
    SELECT j.id FROM done JOIN job_graph j ON j.id = ANY(done.dependents)
    WHERE done.state = 'complete' AND j.group_id IS NOT DISTINCT FROM done.group_id
        AND j.state = 'waiting_on_dependency'
    ORDER BY j.id FOR UPDATE OF j
), released AS (
    UPDATE job_graph j SET
        waiting_on_count = j.waiting_on_count - 1,
        state = CASE WHEN j.waiting_on_count = 1 THEN 'ready' ELSE j.state END::job_state,
        updated_at = clock_timestamp()
    FROM waiting w WHERE j.id = w.id AND j.state = 'waiting_on_dependency'
    RETURNING j.id, j.name, j.target, j.state = 'ready' AS ready
), counted AS (
    UPDATE group_stripes s SET remaining = s.remaining - 1
    FROM done, (SELECT count(*) FROM released) AS after_release
    WHERE done.state <> 'job_failed' AND s.group_id = done.group_id AND s.stripe = done.id % group_stripe_count()
    RETURNING s.remaining = 0 AS emptied, (SELECT state::text FROM groups WHERE id = done.group_id) AS group_state
)
SELECT d.group_id, d.state::text AS state,
    ARRAY(SELECT r.id FROM released r WHERE r.ready ORDER BY r.id)::bigint[] AS ready_ids,
    ARRAY(SELECT r.target FROM released r WHERE r.ready ORDER BY r.id)::text[] AS ready_targets,
    ARRAY(SELECT r.name FROM released r WHERE r.ready ORDER BY r.id)::text[] AS ready_names,
    coalesce((SELECT emptied FROM counted), false)::boolean AS emptied,
    coalesce((SELECT group_state FROM counted), '')::text AS group_state
FROM done d;

-- name: JobFailDependents :many
WITH RECURSIVE down(id) AS (
    SELECT unnest(dependents) FROM job_graph WHERE id = @job_id::bigint
    UNION
    SELECT unnest(j.dependents) FROM down d JOIN job_graph j ON j.id = d.id
), unstarted AS MATERIALIZED (
    SELECT j.id FROM down JOIN job_graph j ON j.id = down.id
    WHERE j.group_id IS NOT DISTINCT FROM @group_id AND j.state IN ('pending', 'waiting_on_dependency', 'ready')
    ORDER BY j.id FOR UPDATE OF j
)
UPDATE job_graph j SET state = 'dependency_failed', error = 'dependency ' || @job_id::bigint || ' failed',
    finished_at = clock_timestamp(), updated_at = clock_timestamp()
FROM unstarted u WHERE j.id = u.id AND j.state IN ('pending', 'waiting_on_dependency', 'ready')
RETURNING j.id;

-- name: JobCancelDependents :many
-- JobCancelDependents is JobFailDependents for a job that was cancelled alone (River UI's Cancel
-- on its running token): its dependents that have not run can never run, and are cancelled.
WITH RECURSIVE down(id) AS (
    SELECT unnest(dependents) FROM job_graph WHERE id = @job_id::bigint
    UNION
    SELECT unnest(j.dependents) FROM down d JOIN job_graph j ON j.id = d.id
), unstarted AS MATERIALIZED (
    SELECT j.id FROM down JOIN job_graph j ON j.id = down.id
    WHERE j.group_id IS NOT DISTINCT FROM @group_id AND j.state IN ('pending', 'waiting_on_dependency', 'ready')
    ORDER BY j.id FOR UPDATE OF j
)
UPDATE job_graph j SET state = 'cancel_complete', error = 'dependency ' || @job_id::bigint || ' cancelled',
    finished_at = clock_timestamp(), updated_at = clock_timestamp()
FROM unstarted u WHERE j.id = u.id AND j.state IN ('pending', 'waiting_on_dependency', 'ready')
RETURNING j.id;

-- name: JobCancelByGroup :execrows
WITH open AS MATERIALIZED (
    SELECT o.id FROM job_graph o WHERE o.group_id = @group_id AND o.state IN ('pending', 'waiting_on_dependency', 'ready', 'running')
    ORDER BY o.id FOR UPDATE
)
UPDATE job_graph j SET
    state = CASE WHEN j.state = 'running' THEN 'cancel_pending' ELSE 'cancel_complete' END::job_state,
    finished_at = CASE WHEN j.state = 'running' THEN NULL ELSE clock_timestamp() END,
    updated_at = clock_timestamp()
FROM open WHERE j.id = open.id AND j.state IN ('pending', 'waiting_on_dependency', 'ready', 'running');

-- name: JobCountCancelPending :one
SELECT count(*) FROM job_graph WHERE group_id = @group_id AND state = 'cancel_pending';

-- name: JobResetForRetry :execrows
WITH finished AS MATERIALIZED (
    SELECT o.id FROM job_graph o WHERE o.group_id = @group_id AND o.state IN ('job_failed', 'dependency_failed', 'cancel_complete')
    ORDER BY o.id FOR UPDATE
)
UPDATE job_graph j SET state = 'waiting_on_dependency', attempt = 0, error = NULL, exit_code = NULL,
    as_built = NULL, worker_id = NULL, log_incomplete = false, started_at = NULL, finished_at = NULL,
    updated_at = clock_timestamp()
FROM finished f WHERE j.id = f.id AND j.state IN ('job_failed', 'dependency_failed', 'cancel_complete');

-- name: JobGetForRerun :one
-- JobGetForRerun locks a job that River UI's Retry asks to run again, and reads what the rerun
-- needs.
SELECT group_id, name, target, state::text AS state FROM job_graph WHERE id = @id FOR UPDATE;

-- name: JobResetForRerun :many
-- JobResetForRerun resets a failed or cancelled job and its transitive dependents that failed or
-- were cancelled (with it, or with its group) as JobResetForRetry resets a group's, locking them
-- in id order. The caller has locked the job itself first, and checked its state.
WITH RECURSIVE down(id) AS (
    SELECT unnest(dependents) FROM job_graph WHERE id = @job_id::bigint
    UNION
    SELECT unnest(j.dependents) FROM down d JOIN job_graph j ON j.id = d.id
), reset AS MATERIALIZED (
    SELECT j.id FROM job_graph j
    WHERE j.group_id = @group_id AND (j.id = @job_id::bigint OR j.id IN (SELECT id FROM down))
        AND j.state IN ('job_failed', 'dependency_failed', 'cancel_complete')
    ORDER BY j.id FOR UPDATE OF j
)
UPDATE job_graph j SET state = 'waiting_on_dependency', attempt = 0, error = NULL, exit_code = NULL,
    as_built = NULL, worker_id = NULL, log_incomplete = false, started_at = NULL, finished_at = NULL,
    updated_at = clock_timestamp()
FROM reset r WHERE j.id = r.id
RETURNING j.id;

-- name: JobListExpiredLeases :many
SELECT id, attempt, lease_token FROM job_graph
WHERE state IN ('running', 'cancel_pending') AND lease_expires_at < clock_timestamp() AND NOT reported
ORDER BY lease_expires_at LIMIT @max_rows;

-- name: JobExpire :one
UPDATE job_graph j SET
    state = CASE
        WHEN j.state = 'cancel_pending' THEN 'cancel_complete'
        WHEN j.attempt >= j.max_attempts THEN 'job_failed'
        ELSE 'ready' END::job_state,
    error = CASE WHEN j.attempt >= j.max_attempts AND j.state = 'running'
        THEN format('worker lost on all %s attempts', j.max_attempts) END,
    finished_at = CASE WHEN j.state = 'cancel_pending' OR j.attempt >= j.max_attempts THEN clock_timestamp() END,
    lease_token = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
FROM job_graph old
WHERE j.id = @id AND old.id = j.id AND j.attempt = @attempt AND j.lease_token = @lease_token::bigint
    AND j.state IN ('running', 'cancel_pending') AND j.lease_expires_at < clock_timestamp() AND NOT j.reported
RETURNING j.group_id, j.name, j.target, j.state::text AS state, old.worker_id, j.max_attempts;

-- name: JobLockUnfinished :exec
SELECT FROM job_graph WHERE group_id = @group_id
    AND state NOT IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete')
ORDER BY id FOR UPDATE;

-- name: JobFailByRecount :many
UPDATE job_graph j SET state = 'dependency_failed', finished_at = clock_timestamp(), updated_at = clock_timestamp(),
    error = 'a dependency failed (found by recount)'
WHERE j.group_id = @group_id AND j.state IN ('pending', 'waiting_on_dependency', 'ready')
    AND EXISTS (SELECT FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state IN ('job_failed', 'dependency_failed'))
RETURNING j.id;

-- name: JobCancelByRecount :many
-- JobCancelByRecount cancels the unstarted jobs of a group that wait on a cancelled job: they
-- can never run (a rerun job's dependent that also waits on another cancelled job).
UPDATE job_graph j SET state = 'cancel_complete', finished_at = clock_timestamp(), updated_at = clock_timestamp(),
    error = 'a dependency was cancelled (found by recount)'
WHERE j.group_id = @group_id AND j.state IN ('pending', 'waiting_on_dependency', 'ready')
    AND EXISTS (SELECT FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state = 'cancel_complete')
RETURNING j.id;

-- name: JobRecountWaiting :many
-- JobRecountWaiting sets counters to the readiness query: how many of a job's dependencies are
-- not complete, computed from the immutable array alone.
UPDATE job_graph j
SET waiting_on_count = (SELECT count(*) FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state <> 'complete'),
    updated_at = clock_timestamp()
WHERE j.group_id = @group_id AND j.state IN ('pending', 'waiting_on_dependency')
    AND j.waiting_on_count <> (SELECT count(*) FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state <> 'complete')
RETURNING j.id;

-- name: JobReadyUnblocked :many
UPDATE job_graph SET state = 'ready', updated_at = clock_timestamp()
WHERE group_id = @group_id AND state IN ('pending', 'waiting_on_dependency') AND waiting_on_count = 0
RETURNING id, name, target;

-- name: JobListDrift :many
SELECT j.group_id, format('job %s: counter %s, unfinished dependencies %s', j.id, j.waiting_on_count,
    (SELECT count(*) FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state <> 'complete'))::text AS message
FROM job_graph j JOIN groups g ON g.id = j.group_id
WHERE g.state IN ('queued', 'dispatching') AND j.state = 'waiting_on_dependency'
    AND j.waiting_on_count <> (SELECT count(*) FROM job_graph d WHERE d.id = ANY(j.dependencies) AND d.state <> 'complete')
ORDER BY j.id LIMIT 1000;

-- name: JobGraphAnalyze :exec
-- JobGraphAnalyze refreshes the planner's statistics of job_graph (see SubmitTx).
ANALYZE job_graph;

-- name: JobCountOpen :many
-- JobCountOpen counts the jobs of open groups by state and target, through the groups' state
-- index and the jobs' group index; every target with a worker reports every state.
-- A gauge read at scrape time (work.Gauges); the state lists are parameters (jobgraph.JobStates,
-- GroupStates), so every state reports a series, zero included.
WITH open AS (
    SELECT j.state::text AS state, j.target FROM groups g JOIN job_graph j ON j.group_id = g.id
    WHERE g.state = ANY(CAST(@open_states::text[] AS group_state[]))
), targets AS (SELECT target FROM target_workers UNION SELECT target FROM open)
SELECT s::text AS state, t.target, count(o.target)::float8 AS jobs FROM targets t
CROSS JOIN unnest(@job_states::text[]) s
LEFT JOIN open o ON o.state = s AND o.target = t.target
GROUP BY s, t.target;

-- name: ReadyJobOldestAge :many
-- ReadyJobOldestAge is how long the oldest ready job of each target served by a worker has
-- waited, in seconds; 0 when none waits.
SELECT t.target, coalesce(extract(epoch FROM now() - (
        SELECT min(j.updated_at) FROM job_graph j WHERE j.target = t.target AND j.state = 'ready')), 0)::float8 AS seconds
FROM (SELECT DISTINCT target FROM target_workers) t;
