-- River's tables as the gauges' queries read them, for sqlc only (never applied to a database):
-- River's own migrations create them, with more columns than the few query.sql reads.
CREATE TYPE river_job_state AS ENUM (
    'available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled'
);

CREATE TABLE river_job (
    id           bigint          PRIMARY KEY,
    state        river_job_state NOT NULL,
    queue        text            NOT NULL,
    priority     smallint        NOT NULL,
    scheduled_at timestamptz     NOT NULL
);

CREATE TABLE river_queue (
    name text PRIMARY KEY
);
