-- The DataJoint jobs table (one for every computed table, told apart by table_name), the
-- scheduling events that rate-limit schedule_jobs and cleanup_jobs, and the trigger function that
-- tells the service about changes in upstream and target tables.

-- +goose Up
-- Identifiers compare bytewise (COLLATE "C"): random md5 keys make every insert a B-tree
-- descent, and locale-aware comparisons doubled schedule_jobs' time over a million keys.
CREATE TABLE jobs (
    table_name    text COLLATE "C" NOT NULL,
    -- md5 of the key's canonical jsonb text: attribute names and values, so {a:1,b:23} and
    -- {a:12,b:3} differ.
    key_hash      char(32) COLLATE "C" NOT NULL,
    status        text COLLATE "C" NOT NULL
        CHECK (status IN ('scheduled', 'reserved', 'error', 'ignore', 'success')),
    key           jsonb            NOT NULL,
    error_message varchar(2047),
    error_stack   text,
    "user"        text             NOT NULL DEFAULT current_user,
    host          text             NOT NULL DEFAULT '',
    pid           integer          NOT NULL DEFAULT 0,
    connection_id bigint           NOT NULL DEFAULT pg_backend_pid(),
    "timestamp"   timestamptz      NOT NULL DEFAULT now(),
    run_duration  double precision,
    run_metadata  jsonb,
    PRIMARY KEY (table_name, key_hash)
);

-- Claiming the next scheduled key in key order, and counting by status, use this index; a
-- reserved row is found again by the primary key.
CREATE INDEX jobs_table_status_key ON jobs (table_name, status, key);

CREATE TABLE scheduling_events (
    table_name text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('schedule', 'cleanup')),
    last_at    timestamptz NOT NULL,
    keys       bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, kind)
);

-- +goose StatementBegin
CREATE FUNCTION notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('populate_change', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME || ' ' || TG_OP);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION notify_change();
DROP TABLE scheduling_events;
DROP TABLE jobs;
