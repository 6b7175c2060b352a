-- Populate runs: POST /v1/tables/{name}/populate records a run and the keys it took, and enqueues
-- River makes for them; the run is followed, waited for and cancelled through these rows, so it
-- outlives the replica that accepted it.

-- +goose Up
CREATE TABLE populate_runs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_name      text        NOT NULL,
    state           text        NOT NULL DEFAULT 'running'
        CHECK (state IN ('running', 'done', 'interrupted', 'failed')),
    -- Why a running run takes no more keys: cancel (its in-flight makes are recorded as
    -- KeyboardInterrupt), sigterm (a make was cut off by shutdown), error (a make failed without
    -- suppress_errors). The run ends once its queued makes have ended.
    stopping        text        CHECK (stopping IN ('cancel', 'sigterm', 'error')),
    -- The populate request as accepted (restriction, order, max_calls, ...).
    options         jsonb       NOT NULL,
    processes       integer     NOT NULL CHECK (processes >= 1),
    suppress_errors boolean     NOT NULL,
    -- Counts over the run's keys, kept by the transactions that change them.
    total           bigint      NOT NULL DEFAULT 0,
    queued          bigint      NOT NULL DEFAULT 0,
    made            bigint      NOT NULL DEFAULT 0,
    errors          bigint      NOT NULL DEFAULT 0,
    skipped         bigint      NOT NULL DEFAULT 0,
    dropped         bigint      NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);

-- The keys a run took, in its order (seq). pending: not yet handed to River; queued: its
-- populate_run_make job is waiting or running; made, error: the key's make ended so (whichever
-- worker made it); skipped: the key needed no make when its turn came (made, ignored or cleaned
-- up meanwhile); dropped: the run stopped before its turn.
CREATE TABLE populate_run_keys (
    run_id        bigint          NOT NULL REFERENCES populate_runs ON DELETE CASCADE,
    seq           integer         NOT NULL,
    table_name    text COLLATE "C" NOT NULL,
    key_hash      char(32) COLLATE "C" NOT NULL,
    key           jsonb           NOT NULL,
    state         text            NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'queued', 'made', 'error', 'skipped', 'dropped')),
    error_message varchar(2047),
    PRIMARY KEY (run_id, seq)
);

-- Every finishing transaction looks up the open run keys of its key; the index holds only those.
CREATE INDEX populate_run_keys_open ON populate_run_keys (table_name, key_hash) WHERE state IN ('pending', 'queued');
-- A run's next pending keys, and its errors, in order.
CREATE INDEX populate_run_keys_run_state ON populate_run_keys (run_id, state, seq);

-- +goose Down
DROP TABLE populate_run_keys;
DROP TABLE populate_runs;
