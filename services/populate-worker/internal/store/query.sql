-- name: JobGet :one
SELECT table_name, key_hash, status, key, error_message, error_stack, "user", host, pid,
    connection_id, "timestamp", run_duration, run_metadata, enqueued
FROM jobs WHERE table_name = @table_name AND key_hash = @key_hash;

-- name: JobList :many
-- JobList pages through jobs in (table_name, key_hash) order; an empty table or status matches
-- every one.
SELECT table_name, key_hash, status, key, error_message, error_stack, "user", host, pid,
    connection_id, "timestamp", run_duration, run_metadata, enqueued
FROM jobs
WHERE (@table_name::text = '' OR table_name = @table_name::text) AND (@status::text = '' OR status = @status::text)
    AND (table_name, key_hash) > (@after_table::text, @after_key_hash::text)
ORDER BY table_name, key_hash LIMIT @max_rows;

-- name: JobReserve :one
-- JobReserve reserves the scheduled job of a key hash. It is one UPDATE guarded by
-- status = 'scheduled': of any number of concurrent callers exactly one gets the row (the others
-- wait for its lock, re-check the status and update nothing). With revive it reserves an error
-- job as well, clearing its error (a make job retried in River UI makes its key again), and says
-- so in run_metadata (retried_from_error). With yield (a background make) it leaves a key that a
-- running populate run, not stopping, holds pending or queued: the run makes it (RunHoldingKey).
UPDATE jobs SET status = 'reserved', error_message = NULL, error_stack = NULL, "user" = current_user,
    host = @host, pid = @pid, connection_id = pg_backend_pid(), "timestamp" = now(), run_duration = NULL,
    run_metadata = @run_metadata::jsonb || jsonb_build_object('lease_until', now() + @lease::interval)
        || CASE WHEN status = 'error' THEN jsonb_build_object('retried_from_error', error_message) ELSE '{}'::jsonb END
WHERE jobs.table_name = @table_name AND jobs.key_hash = @key_hash AND (jobs.status = 'scheduled' OR (@revive::boolean AND jobs.status = 'error'))
    AND NOT (@yield::boolean AND EXISTS (SELECT 1 FROM populate_run_keys k JOIN populate_runs r ON r.id = k.run_id
        WHERE k.table_name = jobs.table_name AND k.key_hash = jobs.key_hash AND k.state IN ('pending', 'queued')
            AND r.state = 'running' AND r.stopping IS NULL))
RETURNING key_hash, key, connection_id, (run_metadata ? 'retried_from_error')::boolean AS revived;

-- name: JobLeaseExtend :exec
UPDATE jobs
SET run_metadata = run_metadata || jsonb_build_object('lease_until', now() + @lease::interval)
WHERE table_name = @table_name AND key_hash = @key_hash AND status = 'reserved' AND connection_id = @connection_id;

-- name: JobLockReserved :one
-- JobLockReserved locks the job row and counts it if it is still reserved by the connection.
SELECT count(*) FROM (SELECT 1 FROM jobs
    WHERE table_name = @table_name AND key_hash = @key_hash AND status = 'reserved' AND connection_id = @connection_id
    FOR UPDATE) x;

-- name: JobSetSuccess :exec
UPDATE jobs SET status = 'success', "timestamp" = now(), run_duration = @run_duration,
    run_metadata = (run_metadata - 'lease_until') || @run_metadata::jsonb
WHERE table_name = @table_name AND key_hash = @key_hash;

-- name: JobDelete :exec
DELETE FROM jobs WHERE table_name = @table_name AND key_hash = @key_hash;

-- name: JobSetError :exec
UPDATE jobs SET status = 'error', error_message = @error_message, error_stack = @error_stack,
    "timestamp" = now(), run_duration = @run_duration, run_metadata = (run_metadata - 'lease_until') || @run_metadata::jsonb
WHERE table_name = @table_name AND key_hash = @key_hash;

-- name: JobSetStatus :exec
-- JobSetStatus is ignore and reschedule of one key; a rescheduled key's make is enqueued in the
-- same transaction (enqueueMakes), not left to the feeder.
UPDATE jobs SET status = @status, error_message = NULL, error_stack = NULL,
    "user" = current_user, host = @host, pid = @pid, connection_id = pg_backend_pid(), "timestamp" = now(),
    enqueued = true
WHERE table_name = @table_name AND key_hash = @key_hash;

-- name: JobCountByTableStatus :many
-- JobCountByTableStatus counts the jobs of each table by status along the (table_name, status,
-- key) index (the ORDER BY on its columns keeps Postgres on it), capped at 100,000 per table and
-- status, so a scrape never scans a huge table.
SELECT t::text AS table_name, s::text AS status, (SELECT count(*) FROM (SELECT 1 FROM jobs j WHERE j.table_name = t AND j.status = s
        ORDER BY j.table_name, j.status, j.key LIMIT 100000) x)::float8 AS jobs
FROM unnest(@tables::text[]) t, unnest(@statuses::text[]) s;

-- name: JobReclaim :many
-- JobReclaim returns to scheduled the reserved jobs whose connection is gone or whose lease
-- expired, skipping rows locked at this instant; their makes are enqueued in the same
-- transaction (enqueueMakes), not left to the feeder.
UPDATE jobs j SET status = 'scheduled', "timestamp" = now(), enqueued = true,
    run_metadata = j.run_metadata || jsonb_build_object('reclaimed_from_connection', j.connection_id)
FROM (SELECT o.table_name, o.key_hash FROM jobs o
    WHERE o.status = 'reserved' AND (
        (o.run_metadata ->> 'lease_until')::timestamptz < now()
        OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a WHERE a.pid = o.connection_id))
    FOR UPDATE SKIP LOCKED) o
WHERE j.table_name = o.table_name AND j.key_hash = o.key_hash
RETURNING j.table_name, j.key_hash;

-- name: SchedulingEventClaim :one
-- SchedulingEventClaim records a scheduling event unless the last one of its kind is more recent
-- than the interval by the database clock; no row means it did not.
INSERT INTO scheduling_events AS ev (table_name, kind, last_at) VALUES (@table_name, @kind, clock_timestamp())
ON CONFLICT (table_name, kind) DO UPDATE SET last_at = clock_timestamp()
WHERE ev.last_at <= clock_timestamp() - @min_interval::interval
RETURNING last_at;

-- name: SchedulingEventSetKeys :exec
UPDATE scheduling_events SET keys = @keys WHERE table_name = @table_name AND kind = @kind;

-- name: TableQualifiedName :one
-- TableQualifiedName is "<schema>.<relname>" of a table name as the search path resolves it.
SELECT (n.nspname || '.' || c.relname)::text AS qualified FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(@name);

-- name: RiverMakeJobsStuck :many
-- RiverMakeJobsStuck returns the make jobs River shows running for longer than the orphan timeout
-- whose key is still scheduled: the client that fetched them died before it reserved the key (a
-- replica killed between River's fetch and JobReserve), and River would rescue them only after
-- MAKE_TIMEOUT. A job with a copy waiting, or fetched within the timeout, is left alone.
SELECT rj.kind, rj.args FROM river_job rj
JOIN jobs j ON j.table_name = rj.args ->> 'table' AND j.key_hash = rj.args ->> 'key_hash'
WHERE rj.state = 'running' AND rj.kind = 'populate_make'
    AND rj.attempted_at < now() - @orphan_timeout::interval AND j.status = 'scheduled'
    AND NOT EXISTS (SELECT 1 FROM river_job w WHERE w.kind = rj.kind AND w.args @> rj.args AND w.id <> rj.id
        AND (w.state IN ('available', 'pending', 'retryable', 'scheduled')
            OR (w.state = 'running' AND w.attempted_at >= now() - @orphan_timeout::interval)))
FOR UPDATE OF j SKIP LOCKED;

-- name: RunInsert :one
INSERT INTO populate_runs (table_name, options, processes, suppress_errors, trace_parent)
VALUES (@table_name, @options, @processes, @suppress_errors, sqlc.narg(trace_parent)) RETURNING id;

-- name: RunSetTotal :exec
UPDATE populate_runs SET total = @total WHERE id = @id;

-- name: RunGet :one
SELECT id, table_name, state, stopping, options, processes, suppress_errors, total, made, errors,
    skipped, dropped, made_elsewhere, created_at, finished_at, clock_timestamp()::timestamptz AS now,
    (SELECT count(*) FROM populate_run_keys k WHERE k.run_id = r.id AND k.state = 'queued') AS queued
FROM populate_runs r WHERE id = @id;

-- name: RunErrorList :many
-- RunErrorList is the run's failed keys in its order, at most max_rows.
SELECT key, key_hash::text AS key_hash, coalesce(error_message, '')::text AS error_message FROM populate_run_keys
WHERE run_id = @run_id AND state = 'error' ORDER BY seq LIMIT @max_rows;

-- name: RunIDsOfOpenKey :many
-- RunIDsOfOpenKey lists the runs holding a key that is still open (pending, queued or waiting),
-- in id order.
SELECT DISTINCT run_id FROM populate_run_keys
WHERE table_name = @table_name AND key_hash = @key_hash AND state IN ('pending', 'queued', 'waiting')
ORDER BY run_id;

-- name: RunLockRunning :many
-- RunLockRunning locks the running runs among ids, in id order: every transaction that changes a
-- run's keys locks the run first, so they never deadlock and a run's counts stay exact.
SELECT id FROM populate_runs WHERE id = ANY(@ids::bigint[]) AND state = 'running' ORDER BY id FOR UPDATE;

-- name: RunKeysResolve :many
-- RunKeysResolve ends a key's open (pending, queued or waiting) entries in the given runs,
-- returning each run and the entry's previous state (the self-join reads the row as it was).
UPDATE populate_run_keys k SET state = @state, error_message = @error_message
FROM populate_run_keys o
WHERE o.run_id = k.run_id AND o.seq = k.seq AND k.run_id = ANY(@run_ids::bigint[])
    AND k.table_name = @table_name AND k.key_hash = @key_hash AND k.state IN ('pending', 'queued', 'waiting')
RETURNING k.run_id, o.state AS was;

-- name: RunTally :one
-- RunTally counts one key's outcome in a run and, for a stop reason, stops the run taking keys
-- (an error stops it only without suppress_errors; cancel and sigterm always).
UPDATE populate_runs SET made = made + @made, errors = errors + @errors, skipped = skipped + @skipped,
    dropped = dropped + @dropped, made_elsewhere = made_elsewhere + @made_elsewhere,
    stopping = coalesce(stopping, CASE WHEN @stop::text = '' OR (@stop::text = 'error' AND suppress_errors)
        THEN NULL ELSE @stop::text END)
WHERE id = @id
RETURNING stopping, processes, table_name;

-- name: RunDropPending :many
-- RunDropPending drops the keys a stopping run had not yet handed to River, and those it waits
-- for another make to end, and returns their hashes.
WITH d AS (UPDATE populate_run_keys SET state = 'dropped' WHERE run_id = @id AND state IN ('pending', 'waiting')
        RETURNING key_hash),
    u AS (UPDATE populate_runs SET dropped = dropped + (SELECT count(*) FROM d) WHERE id = @id)
SELECT key_hash::text AS key_hash FROM d;

-- name: MakesGiveBack :execrows
-- MakesGiveBack gives back to the feeder (not enqueued) the given scheduled keys of the table
-- that a stopped run took and never handed to River, unless another running populate run, not
-- stopping, holds them too; rows locked at this instant are left (a make or a feeder has them).
UPDATE jobs j SET enqueued = false
FROM (SELECT p.key_hash FROM jobs p
    WHERE p.table_name = @table_name::text AND p.key_hash = ANY(@key_hashes::text[])
        AND p.status = 'scheduled' AND p.enqueued
        AND NOT EXISTS (SELECT 1 FROM populate_run_keys k JOIN populate_runs r ON r.id = k.run_id
            WHERE k.table_name = p.table_name AND k.key_hash = p.key_hash AND k.state IN ('pending', 'queued')
                AND r.state = 'running' AND r.stopping IS NULL)
    FOR UPDATE OF p SKIP LOCKED) g
WHERE j.table_name = @table_name::text AND j.key_hash = g.key_hash;

-- name: RunOpenCount :one
-- RunOpenCount counts the run's keys whose make is queued or running for it (at most its
-- processes, along the index), and those still open otherwise, pending or waiting for another
-- make's end: what its counters have not counted ended.
SELECT q.queued::bigint AS queued,
    (r.total - r.made - r.errors - r.made_elsewhere - r.skipped - r.dropped - q.queued)::bigint AS open
FROM populate_runs r,
    (SELECT count(*) AS queued FROM populate_run_keys WHERE run_id = @run_id AND state = 'queued') q
WHERE r.id = @run_id;

-- name: RunKeysQueueNext :many
-- RunKeysQueueNext hands the run's next pending keys, in its order, to River, passing over those
-- another make has reserved: as DataJoint's callers do, the run moves on to the next free key, and
-- that make's end counts the key in the run (made_elsewhere, or skipped when it fails), or, given
-- back, leaves it pending for the run's turn. Within the next window_keys free keys it takes
-- those no other run has queued first, so that runs over the same keys in the same order spread
-- over them rather than race for each; a key another run queued is still taken when its turn
-- comes, and the make that starts first reserves it.
UPDATE populate_run_keys k SET state = 'queued'
FROM (SELECT w.run_id, w.seq FROM (
        SELECT p.run_id, p.seq, p.table_name, p.key_hash FROM populate_run_keys p
        WHERE p.run_id = @run_id AND p.state = 'pending'
            AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.table_name = p.table_name AND j.key_hash = p.key_hash
                AND j.status = 'reserved')
        ORDER BY p.seq LIMIT @window_keys FOR UPDATE OF p) w
    ORDER BY EXISTS (SELECT 1 FROM populate_run_keys o WHERE o.table_name = w.table_name AND o.key_hash = w.key_hash
            AND o.state = 'queued' AND o.run_id <> w.run_id), w.seq
    LIMIT @max_keys) n
WHERE k.run_id = n.run_id AND k.seq = n.seq AND k.state = 'pending'
RETURNING k.seq, k.key_hash::text AS key_hash;

-- name: RunKeyWait :execrows
-- RunKeyWait turns a run's queued key into one waiting for another make's end: its make found the
-- key reserved by that make. (A waiting one handed to River again by the orphan sweep stays so.)
UPDATE populate_run_keys SET state = 'waiting'
WHERE run_id = @run_id AND table_name = @table_name AND key_hash = @key_hash AND state IN ('queued', 'waiting');

-- name: JobStatusLock :one
-- JobStatusLock reads a key's job status and locks its row. A finishing transaction locks the row
-- first, so the reader either waits for it and reads what it wrote, or holds the row until it
-- commits, and the finisher's later look for the key's open run entries sees what it wrote.
SELECT status FROM jobs WHERE table_name = @table_name AND key_hash = @key_hash FOR UPDATE;

-- name: RunHoldingKey :one
-- RunHoldingKey locks the first running populate run, not stopping, that holds the key pending or
-- queued, and returns it with that entry's state: a background make of the key yields to it.
SELECT r.id AS run_id, k.state FROM populate_runs r JOIN populate_run_keys k ON k.run_id = r.id
WHERE k.table_name = @table_name AND k.key_hash = @key_hash AND k.state IN ('pending', 'queued')
    AND r.state = 'running' AND r.stopping IS NULL
ORDER BY r.id LIMIT 1 FOR UPDATE OF r;

-- name: RunFinish :exec
UPDATE populate_runs SET state = @state, finished_at = clock_timestamp() WHERE id = @id AND state = 'running';

-- name: RunCancel :one
-- RunCancel stops a running run taking keys; a SIGTERM stop already recorded stays.
UPDATE populate_runs SET stopping = CASE WHEN stopping = 'sigterm' THEN stopping ELSE 'cancel' END
WHERE id = @id AND state = 'running' RETURNING id;

-- name: RunsCancelled :many
-- RunsCancelled returns which of the runs whose makes this process runs were cancelled.
SELECT id FROM populate_runs WHERE id = ANY(@ids::bigint[]) AND stopping = 'cancel';

-- name: ChangeListen :exec
-- ChangeListen subscribes the connection to populate_change, the channel that the tables'
-- statement triggers (notify_change, migration 00001) notify with payload "<schema>.<table> <TG_OP>".
LISTEN populate_change;

-- name: RunTable :one
SELECT table_name, trace_parent FROM populate_runs WHERE id = @id;

-- name: RunDropUnstarted :exec
-- RunDropUnstarted drops a stopping run's queued keys whose make job has not started: the job
-- then completes without make when it runs (giving the key back to the feeder), and the run need
-- not wait for it.
WITH d AS (UPDATE populate_run_keys k SET state = 'dropped' WHERE k.run_id = @run_id AND k.state = 'queued'
    AND NOT EXISTS (SELECT 1 FROM river_job rj WHERE rj.kind = 'populate_make' AND rj.state = 'running'
        AND rj.args @> jsonb_build_object('run_id', k.run_id, 'key_hash', k.key_hash::text))
    RETURNING 1)
UPDATE populate_runs r SET dropped = r.dropped + (SELECT count(*) FROM d) WHERE r.id = @run_id;

-- name: RunKeysOrphaned :many
-- RunKeysOrphaned lists the queued keys of running runs that no populate_make job (the run's own,
-- or the one it waits for) is left to settle: River discarded the key's job after its attempts
-- (infrastructure errors) or it was cancelled, outside the transaction that settles a key, so the
-- run would stay running. Each comes with the newest ended make job of the key (the run's own
-- first), its state and last error.
SELECT k.run_id, k.table_name::text AS table_name, k.key_hash::text AS key_hash, k.state AS entry_state,
    coalesce(j.status, '')::text AS status, coalesce(j.enqueued, false)::boolean AS enqueued,
    coalesce(e.id, 0)::bigint AS job_id, coalesce(e.state::text, '')::text AS job_state,
    coalesce(e.errors[array_upper(e.errors, 1)] ->> 'error', '')::text AS job_error
FROM populate_run_keys k JOIN populate_runs r ON r.id = k.run_id
LEFT JOIN jobs j ON j.table_name = k.table_name AND j.key_hash = k.key_hash
LEFT JOIN LATERAL (SELECT rj.id, rj.state, rj.errors FROM river_job rj WHERE rj.kind = 'populate_make'
    AND rj.args @> jsonb_build_object('table', k.table_name::text, 'key_hash', k.key_hash::text)
    ORDER BY (rj.args ->> 'run_id') IS NOT DISTINCT FROM k.run_id::text DESC, rj.id DESC LIMIT 1) e ON true
WHERE r.state = 'running' AND k.state IN ('queued', 'waiting')
    AND NOT EXISTS (SELECT 1 FROM river_job rj WHERE rj.kind = 'populate_make'
        AND rj.args @> jsonb_build_object('table', k.table_name::text, 'key_hash', k.key_hash::text)
        AND rj.state NOT IN ('completed', 'discarded', 'cancelled'))
ORDER BY k.run_id, k.seq;

-- name: JobOfTableWaiting :one
-- JobOfTableWaiting reports whether a job of kind (populate_feed, populate_schedule) of the
-- table is waiting (available, scheduled, retryable or pending). A running one does not count: it
-- may have looked before the caller's transaction committed.
SELECT EXISTS (SELECT 1 FROM river_job w WHERE w.kind = @kind::text AND w.args @> jsonb_build_object('table', @table_name::text)
    AND w.state IN ('available', 'scheduled', 'retryable', 'pending'))::boolean AS waiting;

-- name: MakesWaiting :one
-- MakesWaiting counts the table's populate_make jobs waiting in River (not yet running), up to
-- max_jobs, along River's fetching index.
SELECT count(*) FROM (SELECT 1 FROM river_job rj
    WHERE rj.state IN ('available', 'scheduled', 'retryable', 'pending') AND rj.queue = @queue::text
        AND rj.kind = @kind::text AND rj.args ->> 'table' = @table_name::text
    LIMIT @max_jobs) x;

-- name: MakesMark :many
-- MakesMark is one chunk of the feeder: it takes up to max_keys scheduled keys of the table whose
-- make is not enqueued (skipping rows locked at this instant: a reservation, another feeder),
-- marks them enqueued and returns their hashes, for the caller to insert their populate_make
-- jobs in the same transaction. (A populate run marks the keys it takes enqueued: it makes them.)
WITH picked AS (
    SELECT p.key_hash FROM jobs p
    WHERE p.table_name = @table_name::text AND p.status = 'scheduled' AND NOT p.enqueued
    LIMIT @max_keys FOR UPDATE SKIP LOCKED)
UPDATE jobs j SET enqueued = true FROM picked
WHERE j.table_name = @table_name::text AND j.key_hash = picked.key_hash
RETURNING j.key_hash::text AS key_hash;

-- name: MakesClaim :exec
-- MakesClaim is MakesMark for the given keys of a populate run: it marks enqueued those of them
-- that are scheduled and whose make is not enqueued (skipping rows locked at this instant), for
-- the caller to insert the run's make jobs in the same transaction.
WITH picked AS (
    SELECT p.key_hash FROM jobs p
    WHERE p.table_name = @table_name::text AND p.key_hash = ANY(@key_hashes::text[]) AND p.status = 'scheduled' AND NOT p.enqueued
    FOR UPDATE SKIP LOCKED)
UPDATE jobs j SET enqueued = true FROM picked
WHERE j.table_name = @table_name::text AND j.key_hash = picked.key_hash;

-- name: TablesToFeed :many
-- TablesToFeed lists the tables among names that have scheduled keys whose make is not enqueued.
SELECT t::text AS table_name FROM unnest(@names::text[]) t
WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.table_name = t AND j.status = 'scheduled' AND NOT j.enqueued);

-- name: JobCountNotEnqueued :many
-- JobCountNotEnqueued counts, for each table, the scheduled keys whose make is not yet enqueued,
-- along the jobs_to_enqueue index, capped at 100,000 per table as JobCountByTableStatus is.
SELECT t::text AS table_name, (SELECT count(*) FROM (SELECT 1 FROM jobs j
        WHERE j.table_name = t AND j.status = 'scheduled' AND NOT j.enqueued LIMIT 100000) x)::float8 AS jobs
FROM unnest(@tables::text[]) t;

-- name: JobUnenqueue :execrows
-- JobUnenqueue gives a scheduled key whose make job ends without making it back to the feeder.
UPDATE jobs SET enqueued = false
WHERE table_name = @table_name AND key_hash = @key_hash AND status = 'scheduled' AND enqueued;

-- name: MakesLost :many
-- MakesLost gives back to the feeder (enqueued false) the scheduled keys marked enqueued that no
-- make job is waiting for or running, and that no populate run holds pending (the run makes
-- those): their job was
-- cancelled or deleted while it waited (River UI's Cancel and Delete), or discarded by River
-- outside any transaction of the key's. The feeder, its job enqueued and its keys marked in one
-- transaction, never leaves such a key. Each comes with the newest ended populate_make job of
-- the key, if River still has one, and its state.
WITH lost AS (
    SELECT j.table_name, j.key_hash FROM jobs j
    WHERE j.status = 'scheduled' AND j.enqueued
        AND NOT EXISTS (SELECT 1 FROM river_job rj WHERE rj.kind = 'populate_make'
            AND rj.args @> jsonb_build_object('table', j.table_name::text, 'key_hash', j.key_hash::text)
            AND rj.state IN ('available', 'pending', 'retryable', 'scheduled', 'running'))
        AND NOT EXISTS (SELECT 1 FROM populate_run_keys k JOIN populate_runs r ON r.id = k.run_id
            WHERE k.table_name = j.table_name AND k.key_hash = j.key_hash AND k.state = 'pending'
                AND r.state = 'running' AND r.stopping IS NULL)
    LIMIT @max_keys FOR UPDATE OF j SKIP LOCKED)
UPDATE jobs j SET enqueued = false FROM lost
WHERE j.table_name = lost.table_name AND j.key_hash = lost.key_hash
RETURNING j.table_name::text AS table_name, j.key_hash::text AS key_hash,
    coalesce((SELECT rj.id FROM river_job rj WHERE rj.kind = 'populate_make'
        AND rj.args @> jsonb_build_object('table', j.table_name::text, 'key_hash', j.key_hash::text)
        ORDER BY rj.id DESC LIMIT 1), 0)::bigint AS job_id,
    coalesce((SELECT rj.state::text FROM river_job rj WHERE rj.kind = 'populate_make'
        AND rj.args @> jsonb_build_object('table', j.table_name::text, 'key_hash', j.key_hash::text)
        ORDER BY rj.id DESC LIMIT 1), '')::text AS job_state;

-- name: RunList :many
SELECT id, table_name, state, stopping, options, processes, suppress_errors, total, made, errors,
    skipped, dropped, made_elsewhere, created_at, finished_at, clock_timestamp()::timestamptz AS now,
    (SELECT count(*) FROM populate_run_keys k WHERE k.run_id = r.id AND k.state = 'queued') AS queued
FROM populate_runs r
WHERE (@before::bigint = 0 OR id < @before)
    AND (@table_name::text = '' OR table_name = @table_name)
    AND (@state::text = '' OR state = @state)
ORDER BY id DESC LIMIT @max_rows;

-- name: RunKeyGet :one
-- RunKeyGet is the key of a run's entry by its hash.
SELECT key FROM populate_run_keys WHERE run_id = @run_id AND table_name = @table_name AND key_hash = @key_hash LIMIT 1;

-- name: TableDefinitionList :many
-- TableDefinitionList is every computed table defined over the API or seeded from a tables file,
-- retired ones left out.
SELECT name, target, primary_key, key_source, upstream, function_url, function_secret_env,
    auto_schedule, source, created_at, updated_at, retired_at
FROM table_definitions WHERE retired_at IS NULL ORDER BY name;

-- name: TableDefinitionGet :one
SELECT name, target, primary_key, key_source, upstream, function_url, function_secret_env,
    auto_schedule, source, created_at, updated_at, retired_at
FROM table_definitions WHERE name = @name AND retired_at IS NULL;

-- name: TableDefinitionLock :one
-- TableDefinitionLock locks a definition's row, if it has one, and says whether it is in use (not
-- retired): a PUT that finds none creates the table, one that finds it replaces it.
SELECT (retired_at IS NULL)::boolean AS active FROM table_definitions WHERE name = @name FOR UPDATE;

-- name: TableDefinitionPut :exec
-- TableDefinitionPut writes a definition from the API, bringing a retired one back.
INSERT INTO table_definitions (name, target, primary_key, key_source, upstream, function_url,
    function_secret_env, auto_schedule, source)
VALUES (@name, @target, @primary_key, @key_source, @upstream, @function_url, @function_secret_env,
    @auto_schedule, 'api')
ON CONFLICT (name) DO UPDATE SET target = excluded.target, primary_key = excluded.primary_key,
    key_source = excluded.key_source, upstream = excluded.upstream, function_url = excluded.function_url,
    function_secret_env = excluded.function_secret_env, auto_schedule = excluded.auto_schedule,
    source = 'api', updated_at = now(), retired_at = NULL,
    created_at = CASE WHEN table_definitions.retired_at IS NULL THEN table_definitions.created_at ELSE now() END;

-- name: TableDefinitionSeed :many
-- TableDefinitionSeed writes a definition of a tables file, unless the API has written or
-- retired the table since: then it returns no row and the stored definition stays.
INSERT INTO table_definitions (name, target, primary_key, key_source, upstream, function_url,
    function_secret_env, auto_schedule, source)
VALUES (@name, @target, @primary_key, @key_source, @upstream, @function_url, @function_secret_env,
    @auto_schedule, 'file')
ON CONFLICT (name) DO UPDATE SET target = excluded.target, primary_key = excluded.primary_key,
    key_source = excluded.key_source, upstream = excluded.upstream, function_url = excluded.function_url,
    function_secret_env = excluded.function_secret_env, auto_schedule = excluded.auto_schedule, updated_at = now()
WHERE table_definitions.source = 'file'
RETURNING name;

-- name: TableDefinitionRetire :execrows
-- TableDefinitionRetire retires a table: no replica schedules or makes its keys any more, its
-- jobs and rows stay. It is the API's from then on, so that a tables file does not revive it.
UPDATE table_definitions SET retired_at = now(), updated_at = now(), source = 'api'
WHERE name = @name AND retired_at IS NULL;

-- name: TablesNotify :exec
-- TablesNotify tells every replica that the definition of the table named changed; sent in the
-- transaction that changes it, it is delivered when that commits, and only then.
SELECT pg_notify('populate_tables', @name::text);

-- name: TablesListen :exec
-- TablesListen subscribes the connection to populate_tables (TablesNotify).
LISTEN populate_tables;

-- name: RunsStalled :many
-- RunsStalled lists the running populate runs, not stopping, with no key queued while a pending
-- key of theirs is free (no make holds it): the make that held it when the run passed over it was
-- given back (a reclaim) without the run hearing of it. The reclaim pass moves them on.
SELECT r.id FROM populate_runs r
WHERE r.state = 'running' AND r.stopping IS NULL
    AND NOT EXISTS (SELECT 1 FROM populate_run_keys q WHERE q.run_id = r.id AND q.state = 'queued')
    AND EXISTS (SELECT 1 FROM populate_run_keys p WHERE p.run_id = r.id AND p.state = 'pending'
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.table_name = p.table_name AND j.key_hash = p.key_hash
            AND j.status = 'reserved'))
ORDER BY r.id;

-- name: RunKeyRequeue :exec
-- RunKeyRequeue hands a run's waiting key back to the run (queued): the make it waited for ended
-- without settling it.
UPDATE populate_run_keys SET state = 'queued'
WHERE run_id = @run_id AND table_name = @table_name AND key_hash = @key_hash AND state = 'waiting';
