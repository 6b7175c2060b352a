-- Sharded batches: a batch split into shards, each a run_batch_shard job worked by any replica.
-- The coordinator (run_batch) creates the batch row, its shard rows and the shard jobs in one
-- transaction. Each shard writes ready_at when its executors are ready; one send_at is then fixed
-- on the batch row, once, and every shard opens its gate at that instant on its own clock. Each
-- shard writes its jobs, receipts and events in its own transaction; the one that finds every
-- shard finished marks the batch done and enqueues score_batch in that same transaction.

-- +goose Up
-- shards is 0 for a batch run in one process. send_at is the agreed instant of the hot phase.
ALTER TABLE batches
    ADD COLUMN shards  int NOT NULL DEFAULT 0,
    ADD COLUMN send_at timestamptz;

CREATE TABLE batch_shards (
    batch_id          bigint      NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    shard             int         NOT NULL,
    -- pending: not picked up yet; running: an attempt works it (or died working it, until River
    -- hands the job out again); done/failed: finished, for good.
    state             text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
    attempt           int         NOT NULL DEFAULT 0,
    river_job_id      bigint,
    miners            int         NOT NULL,
    error             text,
    -- ready_at is the shard's own clock when its executors were ready and its frames built;
    -- clock_skew_us is the database's clock minus the shard's, measured when it wrote ready_at.
    ready_at          timestamptz,
    clock_skew_us     bigint,
    -- released_at is when the shard opened its gate (its clock); send_spread_us its own spread.
    released_at       timestamptz,
    send_spread_us    bigint,
    stages            jsonb       NOT NULL DEFAULT '[]',
    pregenerated      int         NOT NULL DEFAULT 0,
    pregenerated_used int         NOT NULL DEFAULT 0,
    extra_generated   int         NOT NULL DEFAULT 0,
    started_at        timestamptz,
    finished_at       timestamptz,
    PRIMARY KEY (batch_id, shard)
);

-- Events of a sharded batch say which shard saw them; NULL for a batch run in one process.
ALTER TABLE batch_events ADD COLUMN shard int;

-- +goose Down
ALTER TABLE batch_events DROP COLUMN shard;
DROP TABLE batch_shards;
ALTER TABLE batches DROP COLUMN send_at, DROP COLUMN shards;
