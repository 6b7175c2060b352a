-- name: JobAllocateIDs :many
SELECT nextval(pg_get_serial_sequence('job_graph', 'id'))::bigint AS id FROM generate_series(1, @n::int);

-- name: JobInsertMany :exec
INSERT INTO job_graph (id, group_id, name, target, priority, command, payload, env, timeout_ms,
    dependencies, dependents, waiting_on_count, state, attempt, max_attempts, fetch_rank)
SELECT u.id, @group_id::bigint, u.name, u.target, u.priority,
    ARRAY(SELECT jsonb_array_elements_text(u.command::jsonb)), nullif(u.payload, '')::jsonb, u.env::jsonb, u.timeout_ms,
    ARRAY(SELECT jsonb_array_elements_text(u.deps::jsonb)::bigint),
    ARRAY(SELECT jsonb_array_elements_text(u.dependents::jsonb)::bigint), jsonb_array_length(u.deps::jsonb),
    CASE WHEN jsonb_array_length(u.deps::jsonb) = 0 THEN 'ready' ELSE 'waiting_on_dependency' END::job_state,
    CASE WHEN jsonb_array_length(u.deps::jsonb) = 0 THEN 1 ELSE 0 END,
    @max_attempts::int, u.rank
FROM (
    SELECT unnest(@ids::bigint[]) AS id, unnest(@names::text[]) AS name, unnest(@targets::text[]) AS target,
        unnest(@priorities::int[]) AS priority, unnest(@commands::text[]) AS command,
        unnest(@payloads::text[]) AS payload, unnest(@envs::text[]) AS env,
        unnest(@timeouts_ms::bigint[]) AS timeout_ms, unnest(@deps::text[]) AS deps,
        unnest(@dependents::text[]) AS dependents, unnest(@ranks::int[]) AS rank
) u;

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

-- name: JobReport :one
-- JobReport applies a worker's report in one statement, guarded by the job being ready, running
-- or cancel_pending under the reported attempt: the job's transition (CTE done), the release of
-- its dependents on success (CTEs waiting and released) and the count of the job off its group
-- stripe (CTE counted). It returns no row when the guard matched nothing. A job is ready from
-- the transaction that inserts its River job until a worker's batched mark (JobMarkRunning) or
-- its report, whichever comes first, so a report of a build shorter than a mark's period finds
-- it ready.
--
-- waiting and released decrement the counters of the waiting dependents when the job completed
-- and turn those that reach zero ready, with their next attempt: the caller inserts their River
-- jobs in the same transaction from the rows in ready. The dependents are read by primary key
-- from the job's immutable dependents array and locked in id order first. Row locks serialise
-- two dependencies completing at once: the second UPDATE re-reads the row the first committed,
-- so exactly one of them sees the counter reach zero. The same-group check is written with IS
-- NOT DISTINCT FROM so that the planner looks the dependents up by id rather than scanning the
-- group.
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
        log_incomplete = @log_incomplete::boolean, worker_id = @worker_id::text,
        started_at = coalesce(started_at, @started_at::timestamptz),
        finished_at = clock_timestamp(), updated_at = clock_timestamp(),
        trace_parent = sqlc.narg(trace_parent)::text
    FROM durable
    WHERE id = @id::bigint AND attempt = @attempt::int AND state IN ('ready', 'running', 'cancel_pending')
    RETURNING id, group_id, state, dependents
), waiting AS MATERIALIZED (
    SELECT j.id FROM done JOIN job_graph j ON j.id = ANY(done.dependents)
    WHERE done.state = 'complete' AND j.group_id IS NOT DISTINCT FROM done.group_id
        AND j.state = 'waiting_on_dependency'
    ORDER BY j.id FOR UPDATE OF j
), released AS (
    UPDATE job_graph j SET
        waiting_on_count = j.waiting_on_count - 1,
        state = CASE WHEN j.waiting_on_count = 1 THEN 'ready' ELSE j.state END::job_state,
        attempt = CASE WHEN j.waiting_on_count = 1 THEN j.attempt + 1 ELSE j.attempt END,
        updated_at = clock_timestamp()
    FROM waiting w WHERE j.id = w.id AND j.state = 'waiting_on_dependency'
    RETURNING j.id, j.name, j.target, j.state = 'ready' AS ready, j.attempt, j.fetch_rank, j.command,
        j.env, j.payload, j.timeout_ms,
        -- A traced report links each build it releases to its other dependencies' spans: not to
        -- the job it reports, the parent of the builds it releases.
        CASE WHEN sqlc.narg(trace_parent)::text IS NOT NULL THEN (SELECT array_agg(p.trace_parent)
            FROM job_graph p WHERE p.id = ANY(j.dependencies) AND p.id <> @id::bigint
                AND p.trace_parent IS NOT NULL) END AS links
), counted AS (
    UPDATE group_stripes s SET remaining = s.remaining - 1
    FROM done, (SELECT count(*) FROM released) AS after_release
    WHERE done.state <> 'job_failed' AND s.group_id = done.group_id AND s.stripe = done.id % group_stripe_count()
    RETURNING s.remaining = 0 AS emptied, (SELECT state::text FROM groups WHERE id = done.group_id) AS group_state
)
SELECT d.group_id, d.state::text AS state,
    coalesce((SELECT jsonb_agg(jsonb_build_object('id', r.id, 'name', r.name, 'target', r.target,
        'attempt', r.attempt, 'rank', r.fetch_rank, 'command', r.command, 'env', r.env,
        'payload', r.payload, 'timeout_ms', r.timeout_ms, 'links', r.links) ORDER BY r.id)
        FROM released r WHERE r.ready), '[]')::jsonb AS ready,
    coalesce((SELECT emptied FROM counted), false)::boolean AS emptied,
    coalesce((SELECT group_state FROM counted), '')::text AS group_state
FROM done d;

-- name: JobMarkRunning :exec
-- JobMarkRunning records builds that workers' River fetches started, in one batch off their
-- critical path (buildworker.marker): each job still ready under the attempt is running, with its
-- worker and River's start time, and each group still queued is dispatching. Jobs held by a
-- report are skipped (their report records the same), and locked in id order, then the groups.
WITH started AS (
    SELECT unnest(@ids::bigint[]) AS id, unnest(@attempts::int[]) AS attempt,
        unnest(@workers::text[]) AS worker_id, unnest(@started::timestamptz[]) AS started_at
), locked AS MATERIALIZED (
    SELECT j.id FROM job_graph j JOIN started s ON s.id = j.id
    WHERE j.attempt = s.attempt AND j.state = 'ready' ORDER BY j.id FOR UPDATE OF j SKIP LOCKED
), marked AS (
    UPDATE job_graph j SET state = 'running', worker_id = s.worker_id, started_at = s.started_at,
        updated_at = clock_timestamp()
    FROM locked l, started s WHERE j.id = l.id AND s.id = l.id
    RETURNING j.group_id
)
UPDATE groups g SET state = 'dispatching', updated_at = clock_timestamp()
WHERE g.id IN (SELECT group_id FROM marked UNION SELECT unnest(@group_ids::bigint[])) AND g.state = 'queued';

-- name: JobReplace :one
-- JobReplace takes a job from an attempt that was lost (its process died, or its River job ended
-- without a report): the next attempt is ready (the caller inserts its River job), or the job
-- failed when that was its last attempt, or it is cancel_complete when it was being cancelled.
UPDATE job_graph j SET
    state = CASE
        WHEN j.state = 'cancel_pending' THEN 'cancel_complete'
        WHEN j.attempt >= j.max_attempts THEN 'job_failed'
        ELSE 'ready' END::job_state,
    attempt = CASE WHEN j.state <> 'cancel_pending' AND j.attempt < j.max_attempts THEN j.attempt + 1 ELSE j.attempt END,
    error = CASE WHEN j.state <> 'cancel_pending' AND j.attempt >= j.max_attempts
        THEN format('%s (attempt %s of %s)', @reason::text, j.attempt, j.max_attempts) END,
    worker_id = CASE WHEN j.state = 'cancel_pending' OR j.attempt >= j.max_attempts THEN j.worker_id END,
    started_at = CASE WHEN j.state = 'cancel_pending' OR j.attempt >= j.max_attempts THEN j.started_at END,
    finished_at = CASE WHEN j.state = 'cancel_pending' OR j.attempt >= j.max_attempts THEN clock_timestamp() END,
    updated_at = clock_timestamp()
WHERE j.id = @id AND j.attempt = @attempt AND j.state IN ('ready', 'running', 'cancel_pending')
RETURNING j.group_id, j.name, j.target, j.state::text AS state, j.attempt, j.max_attempts, j.fetch_rank,
    j.command, j.env, j.payload, j.timeout_ms;

-- name: JobCancelOne :one
-- JobCancelOne cancels one job whose River job was cancelled or deleted before it ran (River UI's
-- Cancel or Delete on a waiting build), under the attempt that River job was; the caller cancels
-- its unstarted dependents and settles the group.
UPDATE job_graph SET state = 'cancel_complete', error = @reason::text, finished_at = clock_timestamp(),
    updated_at = clock_timestamp()
WHERE id = @id AND attempt = @attempt AND state IN ('ready', 'running', 'cancel_pending')
RETURNING group_id;

-- name: JobListOrphans :many
-- JobListOrphans finds the jobs of open groups that wait on a River job that is no longer there
-- to run them: pending ones (from before builds were River jobs) that have nothing left to wait
-- for, and ready, running or cancelling ones with no River job waiting or running for their
-- attempt. It is one anti-join in one snapshot: the open groups' unfinished jobs, through the
-- groups' state index and the jobs' (group_id, name) index, against the build_run River jobs
-- that may still run, through River's state index, hashed by job and attempt. A job and the River
-- job of its attempt are written in one transaction, so a snapshot sees both or neither.
WITH waiting AS MATERIALIZED (
    SELECT j.id, j.group_id, j.attempt, j.state, j.waiting_on_count FROM groups g
    JOIN job_graph j ON j.group_id = g.id
    WHERE g.state IN ('queued', 'dispatching') AND j.state IN ('pending', 'ready', 'running', 'cancel_pending')
), live AS (
    SELECT (args->>'job_id')::bigint AS job_id, (args->>'attempt')::int AS attempt FROM river_job
    WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled') AND kind = 'build_run'
)
SELECT w.id, w.group_id, w.attempt, w.state::text AS state FROM waiting w
WHERE CASE WHEN w.state = 'pending' THEN w.waiting_on_count = 0
    ELSE NOT EXISTS (SELECT FROM live l WHERE l.job_id = w.id AND l.attempt = w.attempt) END
LIMIT @max_rows;

-- name: BuildRunOf :many
-- BuildRunOf reads the state of the River jobs of a job's attempt, newest first, through River's
-- GIN index on args (args is a constant here, so the planner can use it): for the few orphans
-- JobListOrphans finds.
SELECT state::text AS state, attempt::int AS attempt FROM river_job
WHERE kind = 'build_run' AND args @> @args::jsonb ORDER BY id DESC;

-- name: JobDispatchPending :one
-- JobDispatchPending makes a pending job with no unfinished dependency ready under its next
-- attempt (the caller inserts its River job).
UPDATE job_graph SET state = 'ready', attempt = attempt + 1, updated_at = clock_timestamp()
WHERE id = @id AND state = 'pending' AND waiting_on_count = 0
RETURNING group_id, name, target, attempt, fetch_rank, command, env, payload, timeout_ms;

-- name: BuildRunLive :many
-- BuildRunLive lists the River jobs of a group's builds that may still run, through River's GIN
-- index on args: the ones a cancel of the group cancels.
SELECT id FROM river_job
WHERE kind = 'build_run' AND args @> jsonb_build_object('group_id', @group_id::bigint)
    AND state IN ('available', 'pending', 'retryable', 'running', 'scheduled')
ORDER BY id;

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
-- on its running build): its dependents that have not run can never run, and are cancelled.
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
-- JobCancelByGroup cancels a group's unfinished jobs: those running (recorded so, or ready with
-- their River job running, which a worker's mark has not recorded yet) become cancel_pending
-- until their worker, told by River's cancel of its job, reports; the others cancel_complete.
WITH open AS MATERIALIZED (
    SELECT o.id FROM job_graph o WHERE o.group_id = @group_id AND o.state IN ('pending', 'waiting_on_dependency', 'ready', 'running')
    ORDER BY o.id FOR UPDATE
), running AS (
    SELECT j.id FROM open JOIN job_graph j ON j.id = open.id
    WHERE j.state = 'running' OR (j.state = 'ready' AND EXISTS (SELECT FROM river_job r
        WHERE r.kind = 'build_run' AND r.state = 'running' AND r.args @> jsonb_build_object('job_id', j.id, 'attempt', j.attempt)))
)
UPDATE job_graph j SET
    state = CASE WHEN j.id IN (SELECT id FROM running) THEN 'cancel_pending' ELSE 'cancel_complete' END::job_state,
    finished_at = CASE WHEN j.id IN (SELECT id FROM running) THEN NULL ELSE clock_timestamp() END,
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
UPDATE job_graph j SET state = 'waiting_on_dependency', error = NULL, exit_code = NULL,
    attempt = CASE WHEN j.id = @job_id::bigint THEN j.attempt ELSE 0 END,
    as_built = NULL, worker_id = NULL, log_incomplete = false, started_at = NULL, finished_at = NULL,
    updated_at = clock_timestamp()
FROM reset r WHERE j.id = r.id
RETURNING j.id;

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
-- JobReadyUnblocked makes the jobs of a group whose dependencies are all complete ready under
-- their next attempt; the caller inserts their River jobs.
UPDATE job_graph SET state = 'ready', attempt = attempt + 1, updated_at = clock_timestamp()
WHERE group_id = @group_id AND state IN ('pending', 'waiting_on_dependency') AND waiting_on_count = 0
RETURNING id, name, target, attempt, fetch_rank, command, env, payload, timeout_ms;

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
-- waited, in seconds; 0 when none waits. The ready jobs are read through the open groups.
WITH ready AS (
    SELECT j.target, min(j.updated_at) AS since FROM groups g JOIN job_graph j ON j.group_id = g.id
    WHERE g.state IN ('queued', 'dispatching') AND j.state = 'ready' GROUP BY j.target
)
SELECT t.target, coalesce(extract(epoch FROM now() - r.since), 0)::float8 AS seconds
FROM (SELECT DISTINCT target FROM target_workers) t LEFT JOIN ready r ON r.target = t.target;
