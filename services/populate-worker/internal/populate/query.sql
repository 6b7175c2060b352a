-- name: JobGet :one
SELECT table_name, key_hash, status, key, error_message, error_stack, "user", host, pid,
    connection_id, "timestamp", run_duration, run_metadata
FROM jobs WHERE table_name = @table_name AND key_hash = @key_hash;

-- name: JobList :many
-- JobList pages through jobs in (table_name, key_hash) order; an empty table or status matches
-- every one.
SELECT table_name, key_hash, status, key, error_message, error_stack, "user", host, pid,
    connection_id, "timestamp", run_duration, run_metadata
FROM jobs
WHERE (@table_name::text = '' OR table_name = @table_name::text) AND (@status::text = '' OR status = @status::text)
    AND (table_name, key_hash) > (@after_table::text, @after_key_hash::text)
ORDER BY table_name, key_hash LIMIT @max_rows;

-- name: JobReserve :one
-- JobReserve reserves the scheduled job of a key hash. It is one UPDATE guarded by
-- status = 'scheduled': of any number of concurrent callers exactly one gets the row (the others
-- wait for its lock, re-check the status and update nothing).
UPDATE jobs SET status = 'reserved', error_message = NULL, error_stack = NULL, "user" = current_user,
    host = @host, pid = @pid, connection_id = pg_backend_pid(), "timestamp" = now(), run_duration = NULL,
    run_metadata = @run_metadata::jsonb || jsonb_build_object('lease_until', now() + @lease::interval)
WHERE table_name = @table_name AND key_hash = @key_hash AND status = 'scheduled'
RETURNING key_hash, key, connection_id;

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
UPDATE jobs SET status = @status, error_message = NULL, error_stack = NULL,
    "user" = current_user, host = @host, pid = @pid, connection_id = pg_backend_pid(), "timestamp" = now()
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
-- expired, skipping rows locked at this instant.
UPDATE jobs j SET status = 'scheduled', "timestamp" = now(),
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

-- name: RiverJobListWaitingOfKey :many
-- RiverJobListWaitingOfKey locks and returns the ids of a key's populate_make River jobs that are
-- still waiting to run, skipping those locked at this instant. The args containment uses River's
-- GIN index on args.
SELECT id FROM river_job
WHERE kind = 'populate_make' AND args @> jsonb_build_object('table', @table_name::text, 'key_hash', @key_hash::text)
    AND state IN ('available', 'pending', 'retryable', 'scheduled')
FOR UPDATE SKIP LOCKED;

-- name: ChangeListen :exec
-- ChangeListen subscribes the connection to populate_change, the channel that the tables'
-- statement triggers (notify_change, migration 00001) notify with payload "<schema>.<table> <TG_OP>".
LISTEN populate_change;
