-- Synthetic batches and everything they measured. A batch row is created before the miners are
-- contacted (phase 1); its jobs, receipts and events are written in one transaction after the
-- last receipt is sent (phase 3), together with the score_batch job for scorer. So a batch is
-- either 'running' with nothing under it, or 'done'/'failed' with all of it.

-- +goose Up
CREATE TABLE batches (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The run_batch job working it: a retried job finds its own batch again (idempotency).
    river_job_id     bigint      NOT NULL UNIQUE,
    attempt          int         NOT NULL DEFAULT 1,
    state            text        NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'failed')),
    reason           text        NOT NULL,
    error            text,
    miners           int         NOT NULL DEFAULT 0,
    previous_jobs    int         NOT NULL DEFAULT 0,
    pregenerated     int         NOT NULL DEFAULT 0,
    pregenerated_used int        NOT NULL DEFAULT 0,
    extra_generated  int         NOT NULL DEFAULT 0,
    stages           jsonb       NOT NULL DEFAULT '[]',
    hot_release_at   timestamptz,
    send_spread_us   bigint,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at      timestamptz
);

-- At most one batch runs at a time, whichever replica works it.
CREATE UNIQUE INDEX batches_one_running ON batches ((true)) WHERE state = 'running';

CREATE TABLE batch_manifests (
    batch_id       bigint NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    miner_hotkey   text   NOT NULL,
    executor_class text   NOT NULL,
    declared       int    NOT NULL,
    tested         int    NOT NULL,
    PRIMARY KEY (batch_id, miner_hotkey, executor_class)
);

CREATE TABLE batch_jobs (
    job_uuid        uuid             PRIMARY KEY,
    batch_id        bigint           NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    miner_hotkey    text             NOT NULL,
    executor_class  text             NOT NULL,
    generator       text             NOT NULL,
    outcome         text             NOT NULL CHECK (outcome IN ('completed', 'excused', 'failed')),
    reason          text             NOT NULL,
    detail          text             NOT NULL DEFAULT '',
    score           double precision NOT NULL,
    initial_sent_at timestamptz,
    response_at     timestamptz,
    ready_at        timestamptz,
    before_send_at  timestamptz,
    after_send_at   timestamptz,
    end_at          timestamptz,
    time_took_us    bigint,
    time_limit_us   bigint           NOT NULL
);

CREATE INDEX batch_jobs_batch ON batch_jobs (batch_id, miner_hotkey, executor_class);

CREATE TABLE batch_receipts (
    batch_id     bigint      NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    job_uuid     uuid        NOT NULL,
    receipt_type text        NOT NULL,
    miner_hotkey text        NOT NULL,
    payload      jsonb       NOT NULL,
    signature    text        NOT NULL,
    sent_at      timestamptz,
    error        text,
    PRIMARY KEY (job_uuid, receipt_type)
);

CREATE TABLE batch_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id    bigint      NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    attempt     int         NOT NULL,
    type        text        NOT NULL,
    subtype     text        NOT NULL,
    description text        NOT NULL,
    data        jsonb       NOT NULL DEFAULT '{}',
    at          timestamptz NOT NULL
);

CREATE INDEX batch_events_batch ON batch_events (batch_id, id);

-- +goose Down
DROP TABLE batch_events;
DROP TABLE batch_receipts;
DROP TABLE batch_jobs;
DROP TABLE batch_manifests;
DROP TABLE batches;
